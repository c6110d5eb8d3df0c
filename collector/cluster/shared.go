// SPDX-License-Identifier: Apache-2.0

package cluster

import (
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/pflag"

	"github.com/jobscope/jobscope/collector"
	"github.com/jobscope/jobscope/internal/flagval"
	"github.com/jobscope/jobscope/internal/poll"
	"github.com/jobscope/jobscope/slurmcli"
)

// shared is what the cluster collectors share: the --slurm.* flags and one
// Slurm command cache, built by the first of them constructed.
type shared struct {
	flagsOnce sync.Once
	fs        *pflag.FlagSet

	cacheOnce sync.Once
	cache     *slurmcli.Cache
	err       error
}

// Factories returns the cluster collectors' factories, in the order --help
// shows them; they share one cache.
func Factories() []collector.Factory { return factories(&shared{}) }

func factories(sh *shared) []collector.Factory {
	return []collector.Factory{JobsFactory(sh), NodesFactory(sh), FairshareFactory(sh),
		SchedulerFactory(sh), CommandsFactory(sh), SacctFactory(sh),
		NodeFactory(sh), QueueWaitFactory(sh), ReservationsFactory(sh), LicensesFactory(sh)}
}

// slurmCommandNames are the commands --slurm.command-path may point elsewhere.
var slurmCommandNames = map[string]bool{"squeue": true, "sinfo": true, "sshare": true, "sdiag": true, "scontrol": true, "sacct": true}

// flags registers the --slurm.* flags once for all cluster collectors.
func (sh *shared) flags(fs *pflag.FlagSet) {
	sh.flagsOnce.Do(func() { sh.fs = fs; slurmFlags(fs) })
}

func slurmFlags(fs *pflag.FlagSet) {
	var poll, maxAge, timeout time.Duration
	var format string
	flagval.Duration(fs, &poll, "slurm.poll-interval", 30*time.Second, 1,
		"Controller mode: run each Slurm command at most once per this interval, whatever the number of scrapes.")
	flagval.Duration(fs, &maxAge, "slurm.max-age", 10*time.Minute, 0,
		"Controller mode: while Slurm commands fail, keep serving their last good values (with jobscope_slurm_snapshot_age_seconds) up to this age, then drop them; 0 keeps them forever.")
	flagval.Duration(fs, &timeout, "slurm.command-timeout", 20*time.Second, 1,
		"Controller mode: kill a Slurm command (its whole process group) after this long.")
	flagval.Enum(fs, &format, "slurm.format", string(slurmcli.FormatAuto), []string{string(slurmcli.FormatAuto), string(slurmcli.FormatJSON), string(slurmcli.FormatText)},
		"Controller mode: output format of squeue and sinfo: auto (JSON, text if the version refuses --json), json or text.")
	flagval.String(fs, new(string), "slurm.bin-dir", "",
		"Controller mode: directory of the Slurm commands (default: looked up in PATH); a given one must exist.", flagval.Optional(flagval.Dir))
	fs.StringToString("slurm.command-path", nil,
		"Controller mode: path of single Slurm commands, e.g. squeue=/opt/slurm/bin/squeue; each must exist.")
	flagval.Check(fs, "slurm.command-path", flagval.Each(checkCommandPath))
}

// checkCommandPath accepts one name=path of --slurm.command-path: a Slurm
// command jobscope runs, and an absolute path to an existing file.
func checkCommandPath(kv string) error {
	name, p, ok := strings.Cut(kv, "=")
	switch {
	case !ok:
		return errors.New("want command=path")
	case !slurmCommandNames[name]:
		return fmt.Errorf("unknown command %q", name)
	case !filepath.IsAbs(p):
		return fmt.Errorf("%s is not an absolute path", p)
	}
	return flagval.File(p)
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

// cacheFor returns the shared cache, building it from the flags the first
// time.
func (sh *shared) cacheFor(env *collector.Env) (*slurmcli.Cache, error) {
	sh.cacheOnce.Do(func() {
		if sh.cache != nil {
			return // tests hand in a cache with a fake clock
		}
		sh.cache, sh.err = newCache(sh.fs, env.Logger)
		if sh.err != nil {
			sh.err = collector.BadFlag(sh.err) // every cause is an option value
		}
	})
	return sh.cache, sh.err
}

func newCache(fs *pflag.FlagSet, log *slog.Logger) (*slurmcli.Cache, error) {
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
	runner, err := slurmRunnerFromFlags(fs, log)
	if err != nil {
		return nil, err
	}
	return slurmcli.NewCache(slurmcli.CacheConfig{Runner: runner, Interval: interval, MaxAge: maxAge, Format: format, Logger: log}), nil
}

// slurmFactory builds the factory of a cluster collector that reads one
// source of the shared cache.
func slurmFactory(sh *shared, name, help string, src slurmcli.Source, build func(c *slurmcli.Cache) slurmCollector) collector.Factory {
	return collector.Factory{
		Name:      name,
		Help:      help,
		DefaultIn: []collector.Mode{collector.ModeController},
		Descs:     func() []*collector.Desc { return build(nil).descs() },
		Flags: func(fs *pflag.FlagSet) func(env *collector.Env) (collector.Collector, error) {
			sh.flags(fs)
			return func(env *collector.Env) (collector.Collector, error) {
				c, err := sh.cacheFor(env)
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
	collector.Collector
	descs() []*collector.Desc
}

// slurmSourceStatus emits a source's up and age metrics, shared by the cluster
// collectors (each emits them for its own source).
type slurmSourceStatus struct {
	up, age *collector.Desc
}

func newSlurmSourceStatus() slurmSourceStatus {
	return slurmSourceStatus{
		up: collector.NewDesc("jobscope_slurm_up",
			"1 if the latest run of the Slurm command behind this source succeeded and parsed, else 0: it failed, or was still running when the scrape had to answer (the cluster values then come from an older snapshot, see jobscope_slurm_snapshot_age_seconds).", "source"),
		age: collector.NewDesc("jobscope_slurm_snapshot_age_seconds",
			"Age of the cached Slurm data served for this source: time since its command last succeeded. Grows while the command fails.", "source"),
	}
}

// read gets a source's value and emits its status. ok is false when there
// is nothing to serve; err is set when the value is not fresh (the latest
// run failed or is still running) or missing, and marks the scrape failed.
func read[T any](st slurmSourceStatus, s *collector.Scrape, c *slurmcli.Cache, p *poll.Poller[T], src slurmcli.Source, ch chan<- prometheus.Metric) (T, bool, error) {
	r := p.Get(s.Context())
	if errors.Is(r.Err, slurmcli.ErrAccountingDisabled) {
		// A source the cluster does not have: no data and no status, so
		// neither jobscope_slurm_up 0 nor a failed collector.
		var zero T
		return zero, false, nil
	}
	v, ok, err := slurmcli.Serve(r, c.MaxAge())
	up := 0.0
	if r.Fresh() {
		up = 1
	}
	ch <- st.up.Gauge(up, string(src))
	if r.Has() {
		ch <- st.age.Gauge(r.Age().Seconds(), string(src))
	}
	if err != nil {
		err = fmt.Errorf("slurm %s: %w", src, err)
	}
	return v, ok, err
}

// source is what a cluster collector reading one source holds: the shared
// cache, and the status metrics of its source.
type source struct {
	cacheRef
	status slurmSourceStatus
}

func newSource(c *slurmcli.Cache) source { return source{cacheRef{c}, newSlurmSourceStatus()} }

// cacheRef is a cluster collector's hold on the shared cache; it closes
// the cache at shutdown (every cluster collector holds it; closing twice
// is harmless).
type cacheRef struct{ cache *slurmcli.Cache }

func (c cacheRef) Close() error {
	if c.cache != nil {
		c.cache.Close()
	}
	return nil
}

// slurmLabel keeps label values valid UTF-8 (const metrics panic on
// anything else), whatever bytes Slurm printed, and makes Slurm's "(null)"
// (an unset field) an empty label, as node mode does.
func slurmLabel(s string) string { return strings.ToValidUTF8(slurmcli.Clean(s), "\uFFFD") }
