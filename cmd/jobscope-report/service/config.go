// SPDX-License-Identifier: Apache-2.0

package service

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/prometheus/common/model"
	"go.yaml.in/yaml/v2"

	"github.com/jobscope/jobscope/cmd/jobscope-report/report"
)

// DefaultConfigFile is where the packages put the service's settings.
const DefaultConfigFile = "/etc/jobscope/report-service.yml"

// Config is the report service's settings (contrib/report-service.yml).
type Config struct {
	// Listen is host:port, or unix:/path for a unix socket (the
	// browser proxy's way in, or local clients').
	Listen string `yaml:"listen"`
	// SocketMode is the unix socket's permission bits.
	SocketMode os.FileMode `yaml:"socket_mode"`
	// Report is the report's own settings: Prometheus (with the
	// credentials only the service holds), thresholds, sacct.
	Report report.Config `yaml:"report"`
	Munge  MungeConfig   `yaml:"munge"`
	Proxy  ProxyConfig   `yaml:"proxy"`
	Slurm  SlurmConfig   `yaml:"slurm"`
	// CacheTTL is how long Slurm's answers on owners and roles are kept.
	CacheTTL model.Duration `yaml:"cache_ttl"`
	// RequestTimeout bounds one request, the report's queries included.
	RequestTimeout model.Duration `yaml:"request_timeout"`
	// MaxConcurrent reports at once; more get 503 at once.
	MaxConcurrent int `yaml:"max_concurrent"`
	// RecentDays is the job list page's period.
	RecentDays int `yaml:"recent_days"`
}

// MungeConfig says how to reach munged.
type MungeConfig struct {
	Socket      string         `yaml:"socket"`
	UnmungePath string         `yaml:"unmunge_path"`
	Timeout     model.Duration `yaml:"timeout"`
}

// ProxyConfig names the authenticating reverse proxy that browsers come
// through: its addresses and the header it puts the user in.
type ProxyConfig struct {
	Header  string   `yaml:"header"`
	Trusted []string `yaml:"trusted"` // CIDRs
	// UnixSocket trusts the header on the unix socket (only the proxy
	// should be able to open it: socket_mode, the directory's group).
	UnixSocket bool `yaml:"unix_socket"`

	prefixes []netip.Prefix
}

// SlurmConfig names the Slurm commands.
type SlurmConfig struct {
	SacctPath    string         `yaml:"sacct_path"`
	SacctmgrPath string         `yaml:"sacctmgr_path"`
	Timeout      model.Duration `yaml:"timeout"`
}

// DefaultConfig is what applies where the file says nothing.
func DefaultConfig() Config {
	return Config{
		Listen: "127.0.0.1:9310", SocketMode: 0o660, Report: report.DefaultConfig(),
		Munge:          MungeConfig{Timeout: model.Duration(5 * time.Second)},
		Slurm:          SlurmConfig{Timeout: model.Duration(30 * time.Second)},
		CacheTTL:       model.Duration(time.Minute),
		RequestTimeout: model.Duration(2 * time.Minute),
		MaxConcurrent:  4,
		RecentDays:     7,
	}
}

// LoadConfig reads path over the defaults; the file must exist.
func LoadConfig(path string) (Config, error) {
	cfg := DefaultConfig()
	b, err := os.ReadFile(path)
	if err != nil {
		return cfg, err
	}
	if err := yaml.UnmarshalStrict(b, &cfg); err != nil {
		return cfg, fmt.Errorf("%s: %w", path, err)
	}
	cfg.Report.Prometheus.HTTP.SetDirectory(filepath.Dir(path))
	if err := cfg.Validate(); err != nil {
		return cfg, fmt.Errorf("%s: %w", path, err)
	}
	return cfg, nil
}

// Validate checks the settings and parses the proxy addresses.
func (c *Config) Validate() error {
	if err := c.Report.Validate(); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	if c.Report.Service != "" {
		return errors.New("report.service: the service asks Prometheus itself, not another service")
	}
	if c.Listen == "" {
		return errors.New("listen: want host:port or unix:/path")
	}
	if c.CacheTTL <= 0 || c.RequestTimeout <= 0 || c.Munge.Timeout <= 0 || c.Slurm.Timeout <= 0 {
		return errors.New("cache_ttl, request_timeout, munge.timeout and slurm.timeout must be positive")
	}
	if c.MaxConcurrent < 1 || c.RecentDays < 1 {
		return errors.New("max_concurrent and recent_days must be at least 1")
	}
	p := &c.Proxy
	p.prefixes = nil
	for _, s := range p.Trusted {
		pr, err := netip.ParsePrefix(s)
		if err != nil {
			a, aerr := netip.ParseAddr(s)
			if aerr != nil {
				return fmt.Errorf("proxy.trusted %q: want an address or CIDR", s)
			}
			pr = netip.PrefixFrom(a, a.BitLen())
		}
		p.prefixes = append(p.prefixes, pr.Masked())
	}
	if (len(p.prefixes) > 0 || p.UnixSocket) && p.Header == "" {
		return errors.New("proxy.header: name the header the proxy puts the user in")
	}
	if p.Header != "" && strings.EqualFold(p.Header, "Authorization") {
		return errors.New("proxy.header: Authorization carries MUNGE credentials")
	}
	return nil
}

// trusts says whether a TCP peer is a configured proxy.
func (p ProxyConfig) trusts(addr netip.Addr) bool {
	addr = addr.Unmap()
	for _, pr := range p.prefixes {
		if pr.Contains(addr) {
			return true
		}
	}
	return false
}
