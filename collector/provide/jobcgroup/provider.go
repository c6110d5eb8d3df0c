// SPDX-License-Identifier: Apache-2.0

// Package jobcgroup is the provider of a job's cgroup usage (CPU time,
// memory, cores): read once per scrape, by whichever collector asks
// first, and shared (the cgroup collector exports it, the power collector
// splits energy by it, the ebpf collector keeps per-core series for the
// cores). It is the one reader of those files of a job's directory.
package jobcgroup

import (
	"sync"

	"github.com/spf13/pflag"

	"github.com/jobscope/jobscope/cgroupfs"
	"github.com/jobscope/jobscope/collector/provide"
	"github.com/jobscope/jobscope/discovery"
)

// Name is the provider's name in a collector's Needs.
const Name = "job-cgroup"

// Provider reads jobs' cgroup usage, once per scrape per job.
type Provider struct{ u *usageReader }

// New returns the provider, ready to read (it has no flags and Start
// builds nothing).
func New() *Provider { return &Provider{u: newUsageReader()} }

// Name implements provide.Provider.
func (p *Provider) Name() string { return Name }

// Flags implements provide.Provider: the provider has none.
func (p *Provider) Flags(*pflag.FlagSet) {}

// Start implements provide.Provider.
func (p *Provider) Start(*provide.Env) error { return nil }

// Close implements provide.Provider.
func (p *Provider) Close() error { return nil }

// scrapeUsage is one scrape's usages, one cell per job; it is the
// provider's value in the scrape's memo (keyed by the provider: one memo
// entry per scrape, not one per job).
type scrapeUsage struct {
	mu sync.Mutex
	of map[*discovery.Job]*usageCell
}

type usageCell struct {
	once sync.Once
	u    *Usage
}

func newScrapeUsage() any { return &scrapeUsage{of: map[*discovery.Job]*usageCell{}} }

// Usage returns the job's cgroup usage in this scrape, reading it on the
// first call of any collector.
func (p *Provider) Usage(s provide.Scrape, j *discovery.Job) *Usage { return p.UsageFrom(s, j, nil) }

// UsageFrom is Usage for a collector that reads the job's other files
// itself: when it asks first, the usage is read through f, whose open
// directories it then goes on using (one open of the job directory, not
// two).
func (p *Provider) UsageFrom(s provide.Scrape, j *discovery.Job, f *cgroupfs.Files) *Usage {
	p.u.sweep(s)
	su := s.Once(p, newScrapeUsage).(*scrapeUsage)
	su.mu.Lock()
	c := su.of[j]
	if c == nil {
		c = &usageCell{}
		su.of[j] = c
	}
	su.mu.Unlock()
	c.once.Do(func() { c.u = p.u.read(s, j, f) })
	return c.u
}
