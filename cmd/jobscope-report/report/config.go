// SPDX-License-Identifier: Apache-2.0

package report

import (
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"time"

	promconfig "github.com/prometheus/common/config"
	"github.com/prometheus/common/model"
	"go.yaml.in/yaml/v2"
)

// DefaultConfigFile holds a site's defaults; --config names another.
const DefaultConfigFile = "/etc/jobscope/report.yml"

// Config is the report's settings: the site file, then flags on top.
type Config struct {
	Prometheus PromConfig `yaml:"prometheus"`
	// Cluster keeps jobs of one cluster (slurm_job_info{cluster}) where
	// several share a Prometheus; sacct is asked with -M for it.
	Cluster string `yaml:"cluster"`
	// Lookback is how far back a job id is searched.
	Lookback model.Duration `yaml:"lookback"`
	// NodeLabel is the Prometheus label that names a node (the scrape
	// target's instance, unless the site relabels).
	NodeLabel string `yaml:"node_label"`
	// Sacct: auto (when sacct is on PATH), always, never.
	Sacct     string `yaml:"sacct"`
	SacctPath string `yaml:"sacct_path"`
	// HelpURL, when set, ends every advice with a pointer to the site's
	// documentation.
	HelpURL    string      `yaml:"help_url"`
	Thresholds Thresholds  `yaml:"thresholds"`
	Usage      UsageConfig `yaml:"usage"`
	// Service, when set, is the report service (a URL, or a unix socket's
	// path) that makes the reports: users then need no Prometheus
	// settings, and prove who they are with MUNGE (docs/report.md).
	Service string `yaml:"service"`
	// MungeSocket is munged's socket for the service's credentials
	// (default: munge's own).
	MungeSocket string `yaml:"munge_socket"`
}

// PromConfig says how to reach Prometheus.
type PromConfig struct {
	URL     string         `yaml:"url"`
	Timeout model.Duration `yaml:"timeout"` // per query
	// HTTP is Prometheus's own client configuration block: basic_auth,
	// authorization, tls_config, proxy_url, ...
	HTTP promconfig.HTTPClientConfig `yaml:"http_config"`
}

// UsageConfig tunes `--user/--account/--partition` summaries.
type UsageConfig struct {
	// RuleInterval is the evaluation interval of the jobscope-usage rules,
	// used only when Prometheus's rules API does not tell it.
	RuleInterval model.Duration `yaml:"rule_interval"`
	// Jobs is how many jobs the text output lists (most core-hours first).
	Jobs int `yaml:"jobs"`
}

// Thresholds decide the warnings. Fractions are 0..1.
type Thresholds struct {
	// MinElapsed: no utilisation warnings for jobs shorter than this
	// (jobstats: 10 samples of 30 s).
	MinElapsed           model.Duration `yaml:"min_elapsed"`
	CPUEfficiencyLow     float64        `yaml:"cpu_efficiency_low"`
	CPUEfficiencyVeryLow float64        `yaml:"cpu_efficiency_very_low"`
	// MemoryLow: peak under this fraction of the request, for requests of
	// at least MemoryLowMinRequest bytes per node.
	MemoryLow           float64 `yaml:"memory_low"`
	MemoryLowMinRequest float64 `yaml:"memory_low_min_request_bytes"`
	MemoryHigh          float64 `yaml:"memory_high"`
	// A GPU is idle in a sample at or under GPUIdleUtilization; it is
	// reported when idle in at least GPUIdleFraction of its samples.
	GPUIdleUtilization float64 `yaml:"gpu_idle_utilization"`
	GPUIdleFraction    float64 `yaml:"gpu_idle_fraction"`
	GPUUtilizationLow  float64 `yaml:"gpu_utilization_low"`
	// A node of a multi-node job counts as unused when its CPU time is
	// under this fraction of the busiest node's.
	NodeUnused float64 `yaml:"node_unused"`
	// Core imbalance: on a node with at least ImbalanceMinCores cores, 90%
	// of the CPU time on at most ImbalanceShare of them.
	ImbalanceMinCores int     `yaml:"imbalance_min_cores"`
	ImbalanceShare    float64 `yaml:"imbalance_share"`
	// Small IO: more than SmallIORate syscalls per second averaging under
	// SmallIOBytes each.
	SmallIOBytes float64 `yaml:"small_io_bytes"`
	SmallIORate  float64 `yaml:"small_io_rate"`
	// Queue: a wait of at least QueueWait for a job that used little of what
	// it asked for.
	QueueWait model.Duration `yaml:"queue_wait"`
	// TimeLimitUsed: an ended job that ran under this fraction of its limit.
	TimeLimitUsed float64 `yaml:"time_limit_used"`
}

// DefaultConfig is what applies without a site file.
func DefaultConfig() Config {
	return Config{
		Prometheus: PromConfig{
			URL: "http://localhost:9090", Timeout: model.Duration(30 * time.Second),
			HTTP: promconfig.DefaultHTTPClientConfig,
		},
		Lookback:  model.Duration(30 * 24 * time.Hour),
		NodeLabel: "instance",
		Sacct:     "auto",
		Usage:     UsageConfig{RuleInterval: model.Duration(time.Minute), Jobs: 15},
		Thresholds: Thresholds{
			MinElapsed:           model.Duration(5 * time.Minute),
			CPUEfficiencyLow:     0.5,
			CPUEfficiencyVeryLow: 0.1,
			MemoryLow:            0.25,
			MemoryLowMinRequest:  1 << 30,
			MemoryHigh:           0.95,
			GPUIdleUtilization:   0.05,
			GPUIdleFraction:      0.5,
			GPUUtilizationLow:    0.15,
			NodeUnused:           0.1,
			ImbalanceMinCores:    4,
			ImbalanceShare:       0.25,
			SmallIOBytes:         4096,
			SmallIORate:          1000,
			QueueWait:            model.Duration(time.Hour),
			TimeLimitUsed:        0.4,
		},
	}
}

// LoadConfig reads path over the defaults. A missing file is no error when
// mustExist is false (the default path: most users never write one).
func LoadConfig(path string, mustExist bool) (Config, error) {
	cfg := DefaultConfig()
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) && !mustExist {
		return cfg, nil
	}
	if err != nil {
		return cfg, err
	}
	// Decoding into the defaults keeps every key the file leaves out.
	if err := yaml.UnmarshalStrict(b, &cfg); err != nil {
		return cfg, fmt.Errorf("%s: %w", path, err)
	}
	cfg.Prometheus.HTTP.SetDirectory(filepath.Dir(path))
	if err := cfg.Validate(); err != nil {
		return cfg, fmt.Errorf("%s: %w", path, err)
	}
	return cfg, nil
}

// Validate checks what flags or a file may have got wrong.
func (c Config) Validate() error {
	if u, err := url.Parse(c.Prometheus.URL); err != nil || u.Scheme == "" || u.Host == "" {
		return fmt.Errorf("prometheus url %q: want http(s)://host:port", c.Prometheus.URL)
	}
	if err := c.Prometheus.HTTP.Validate(); err != nil {
		return fmt.Errorf("prometheus.http_config: %w", err)
	}
	if c.Prometheus.Timeout <= 0 || c.Lookback <= 0 {
		return errors.New("prometheus.timeout and lookback must be positive")
	}
	switch c.Sacct {
	case "auto", "always", "never":
	default:
		return fmt.Errorf("sacct %q: want auto, always or never", c.Sacct)
	}
	if c.NodeLabel == "" || !model.LegacyValidation.IsValidLabelName(c.NodeLabel) {
		return fmt.Errorf("node_label %q is not a label name", c.NodeLabel)
	}
	t := c.Thresholds
	for name, v := range map[string]float64{
		"cpu_efficiency_low": t.CPUEfficiencyLow, "cpu_efficiency_very_low": t.CPUEfficiencyVeryLow,
		"memory_low": t.MemoryLow, "memory_high": t.MemoryHigh, "gpu_idle_utilization": t.GPUIdleUtilization,
		"gpu_idle_fraction": t.GPUIdleFraction, "gpu_utilization_low": t.GPUUtilizationLow,
		"node_unused": t.NodeUnused, "imbalance_share": t.ImbalanceShare, "time_limit_used": t.TimeLimitUsed,
	} {
		if v < 0 || v > 1 {
			return fmt.Errorf("thresholds.%s = %g: want a fraction from 0 to 1", name, v)
		}
	}
	if t.SmallIOBytes < 0 || t.SmallIORate < 0 || t.MemoryLowMinRequest < 0 || t.ImbalanceMinCores < 0 {
		return errors.New("thresholds: negative value")
	}
	if err := validService(c.Service); err != nil {
		return err
	}
	if c.Usage.RuleInterval <= 0 {
		return errors.New("usage.rule_interval must be positive")
	}
	return nil
}
