package collector

import (
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/pflag"

	"github.com/jobscope/jobscope/slurmcli"
)

// SlurmCacheKey is the env.Shared key of the one slurmcli.Cache that every
// cluster collector reads (tests put a cache with a fake clock there).
const SlurmCacheKey = "slurmcli.cache"

// slurmCommandNames are the commands --slurm.command-path may point elsewhere.
var slurmCommandNames = map[string]bool{"squeue": true, "sinfo": true, "sshare": true, "sdiag": true, "scontrol": true, "sacct": true}

// slurmFlags registers the --slurm.* flags. Several cluster collectors
// share them, so the first one to ask registers them and the others read
// the same flags through fs.
func slurmFlags(fs *pflag.FlagSet) {
	if fs.Lookup("slurm.poll-interval") != nil {
		return
	}
	fs.Duration("slurm.poll-interval", 30*time.Second,
		"Controller mode: run each Slurm command at most once per this interval, whatever the number of scrapes.")
	fs.Duration("slurm.max-age", 10*time.Minute,
		"Controller mode: while Slurm commands fail, keep serving their last good values (with jobscope_slurm_snapshot_age_seconds) up to this age, then drop them; 0 keeps them forever.")
	fs.Duration("slurm.command-timeout", 20*time.Second,
		"Controller mode: kill a Slurm command (its whole process group) after this long.")
	fs.String("slurm.format", string(slurmcli.FormatAuto),
		"Controller mode: output format of squeue and sinfo: auto (JSON, text if the version refuses --json), json or text.")
	fs.String("slurm.bin-dir", "",
		"Controller mode: directory of the Slurm commands (default: looked up in PATH).")
	fs.StringToString("slurm.command-path", nil,
		"Controller mode: path of single Slurm commands, e.g. squeue=/opt/slurm/bin/squeue.")
}

// slurmRunnerFromFlags builds the cluster collectors' command runner from
// the --slurm.* flags (bin dir, command paths, timeout).
func slurmRunnerFromFlags(fs *pflag.FlagSet, log *slog.Logger) (*slurmcli.Runner, error) {
	if fs.Lookup("slurm.command-timeout") == nil {
		return nil, fmt.Errorf("--slurm.* flags are not registered")
	}
	timeout, _ := fs.GetDuration("slurm.command-timeout")
	binDir, _ := fs.GetString("slurm.bin-dir")
	paths, _ := fs.GetStringToString("slurm.command-path")
	if timeout <= 0 {
		return nil, fmt.Errorf("--slurm.command-timeout must be positive, got %s", timeout)
	}
	for name, p := range paths {
		if !slurmCommandNames[name] {
			return nil, fmt.Errorf("--slurm.command-path: unknown command %q", name)
		}
		if !filepath.IsAbs(p) {
			return nil, fmt.Errorf("--slurm.command-path: %s=%q is not an absolute path", name, p)
		}
	}
	return &slurmcli.Runner{BinDir: binDir, Paths: paths, Timeout: timeout, Logger: log}, nil
}

// slurmCache returns the shared cache, building it from the flags the
// first time.
func slurmCache(fs *pflag.FlagSet, env *Env) (*slurmcli.Cache, error) {
	o, err := env.Shared.Get(SlurmCacheKey, func() (any, error) {
		interval, _ := fs.GetDuration("slurm.poll-interval")
		maxAge, _ := fs.GetDuration("slurm.max-age")
		formatStr, _ := fs.GetString("slurm.format")
		if interval <= 0 {
			return nil, fmt.Errorf("--slurm.poll-interval must be positive, got %s", interval)
		}
		if maxAge < 0 {
			return nil, fmt.Errorf("--slurm.max-age must not be negative, got %s", maxAge)
		}
		format, err := slurmcli.ParseFormat(formatStr)
		if err != nil {
			return nil, fmt.Errorf("--slurm.format: %w", err)
		}
		runner, err := slurmRunnerFromFlags(fs, env.Logger)
		if err != nil {
			return nil, err
		}
		return slurmcli.NewCache(slurmcli.CacheConfig{
			Runner:   runner,
			Interval: interval,
			MaxAge:   maxAge,
			Format:   format,
			Logger:   env.Logger,
		}), nil
	})
	if err != nil {
		return nil, err
	}
	c, ok := o.(*slurmcli.Cache)
	if !ok {
		return nil, fmt.Errorf("shared %q is a %T, not a slurm cache", SlurmCacheKey, o)
	}
	return c, nil
}

// slurmFactory builds the factory of a cluster collector that reads one
// source of the shared snapshot.
func slurmFactory(name, help string, src slurmcli.Source, build func(c *slurmcli.Cache) slurmCollector) Factory {
	return Factory{
		Name:      name,
		Help:      help,
		DefaultIn: []Mode{ModeController},
		Descs:     func() []*prometheus.Desc { return build(nil).descs() },
		Flags: func(fs *pflag.FlagSet) func(env *Env) (Collector, error) {
			slurmFlags(fs)
			return func(env *Env) (Collector, error) {
				c, err := slurmCache(fs, env)
				if err != nil {
					return nil, err
				}
				if src != "" {
					c.Want(src)
				}
				return build(c), nil
			}
		},
	}
}

// slurmCollector is a cluster collector that can list its descriptors
// without a cache (for docs/metrics.md).
type slurmCollector interface {
	Collector
	descs() []*prometheus.Desc
}

// slurmSourceStatus emits a source's up and age metrics, shared by the cluster
// collectors (each emits them for its own source).
type slurmSourceStatus struct {
	up, age *prometheus.Desc
}

func newSlurmSourceStatus() slurmSourceStatus {
	return slurmSourceStatus{
		up: prometheus.NewDesc("jobscope_slurm_up",
			"1 if the latest run of the Slurm command behind this source succeeded and parsed, else 0: it failed, or was still running when the scrape had to answer (the cluster values then come from an older snapshot, see jobscope_slurm_snapshot_age_seconds).",
			[]string{"source"}, nil),
		age: prometheus.NewDesc("jobscope_slurm_snapshot_age_seconds",
			"Age of the cached Slurm data served for this source: time since its command last succeeded. Grows while the command fails.",
			[]string{"source"}, nil),
	}
}

// read takes the source's value from a fresh snapshot and emits its status.
// ok is false when there is nothing to serve; err is set when the value is
// not fresh (latest run failed) or missing, and marks the scrape failed.
func (st slurmSourceStatus) read(s *Scrape, c *slurmcli.Cache, src slurmcli.Source, ch chan<- prometheus.Metric) (any, bool, error) {
	snap := c.Get(s.Context())
	v, age, ok, err := snap.Value(src)
	up := 0.0
	if snap.Results[src].Fresh() {
		up = 1
	}
	ch <- prometheus.MustNewConstMetric(st.up, prometheus.GaugeValue, up, string(src))
	if _, has := snap.Age(src); has {
		ch <- prometheus.MustNewConstMetric(st.age, prometheus.GaugeValue, age.Seconds(), string(src))
	}
	if err != nil {
		err = fmt.Errorf("slurm %s: %w", src, err)
	}
	return v, ok, err
}

// slurmLabel keeps label values valid UTF-8 (const metrics panic on
// anything else), whatever bytes Slurm printed, and makes Slurm's "(null)"
// (an unset field) an empty label, as node mode does.
func slurmLabel(s string) string { return strings.ToValidUTF8(slurmcli.Clean(s), "\uFFFD") }
