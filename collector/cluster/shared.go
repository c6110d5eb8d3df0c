// SPDX-License-Identifier: Apache-2.0

package cluster

import (
	"errors"
	"fmt"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/pflag"

	"github.com/jobscope/jobscope/collector"
	"github.com/jobscope/jobscope/collector/provide"
	"github.com/jobscope/jobscope/collector/provide/slurm"
	"github.com/jobscope/jobscope/internal/poll"
	"github.com/jobscope/jobscope/slurmcli"
)

// shared is what the cluster collectors share: one Slurm command cache,
// the Slurm provider's (which owns the --slurm.* flags), or one a test
// hands in with a fake clock.
type shared struct {
	cache *slurmcli.Cache
}

// Factories returns the cluster collectors' factories, in the order --help
// shows them; they share one cache.
func Factories() []collector.Factory { return factories(&shared{}) }

func factories(sh *shared) []collector.Factory {
	return []collector.Factory{JobsFactory(sh), NodesFactory(sh), FairshareFactory(sh),
		SchedulerFactory(sh), CommandsFactory(sh), SacctFactory(sh),
		NodeFactory(sh), QueueWaitFactory(sh), ReservationsFactory(sh), LicensesFactory(sh)}
}

// cacheFor returns the shared cache: the Slurm provider's, started once
// for every cluster collector.
func (sh *shared) cacheFor(env *collector.Env) (*slurmcli.Cache, error) {
	if sh.cache != nil {
		return sh.cache, nil // tests hand in a cache with a fake clock
	}
	p, err := provide.Need[*slurm.Provider](env.Providers, slurm.Name)
	if err != nil {
		return nil, collector.BadFlag(err) // every cause is an option value
	}
	return p.Cache(), nil
}

// slurmFactory builds the factory of a cluster collector that reads one
// source of the shared cache.
func slurmFactory(sh *shared, name, help string, src slurmcli.Source, build func(c *slurmcli.Cache) slurmCollector) collector.Factory {
	return collector.Factory{
		Name:      name,
		Help:      help,
		DefaultIn: []collector.Mode{collector.ModeController},
		Needs:     []string{slurm.Name},
		Descs:     func() []*collector.Desc { return build(nil).descs() },
		Flags: func(*pflag.FlagSet) func(env *collector.Env) (collector.Collector, error) {
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
