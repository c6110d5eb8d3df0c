// SPDX-License-Identifier: Apache-2.0

package collector

import (
	"context"
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"

	"github.com/jobscope/jobscope/cgroupfs"
	"github.com/jobscope/jobscope/discovery"
)

// round is one scrape, shared by every collector of it: its deadline, its
// serial number and the values computed at most once per scrape.
type round struct {
	ctx      context.Context
	serial   uint64
	problems *Problems

	jobsOnce sync.Once
	listJobs func() []*discovery.Job
	jobs     []*discovery.Job
	scan     discovery.ScanStats // what discovery saw; set with jobs

	usage   *usageReader
	usageMu sync.Mutex
	usageOf map[*discovery.Job]*usageCell

	// pairs shares label pairs across this collection's collectors.
	pairs *PairCache

	gpu        GPUSource
	gpuOnce    sync.Once
	gpuRead    *GPUReading
	gpuReadErr error
}

type usageCell struct {
	once sync.Once
	u    *Usage
}

// Scrape is one scrape as one collector sees it.
type Scrape struct {
	*round
	name     string
	panicked atomic.Bool
}

// ScrapeOptions build a scrape outside an exporter (tests running one
// collector).
type ScrapeOptions struct {
	// Serial numbers scrapes in the order they start; state kept between
	// scrapes uses it. Tests scraping twice give increasing numbers.
	Serial   uint64
	Jobs     []*discovery.Job
	Problems *Problems
	GPU      GPUSource
}

// NewScrape builds a scrape for the collector called name (tests).
func NewScrape(ctx context.Context, name string, o ScrapeOptions) *Scrape {
	jobs := o.Jobs
	return (&round{ctx: ctx, serial: o.Serial, problems: o.Problems, listJobs: func() []*discovery.Job { return jobs },
		usage: newUsageReader(), gpu: o.GPU, pairs: NewPairCache()}).view(name)
}

func (r *round) view(name string) *Scrape { return &Scrape{round: r, name: name} }

// Context carries the scrape deadline.
func (s *Scrape) Context() context.Context { return s.ctx }

// Serial numbers the scrape: scrapes that start later have higher ones.
func (s *Scrape) Serial() uint64 { return s.serial }

// Jobs returns this scrape's discovered jobs (discovery runs once per scrape,
// on first use).
func (s *Scrape) Jobs() []*discovery.Job {
	s.jobsOnce.Do(func() {
		if s.listJobs != nil {
			s.jobs = s.listJobs()
		}
	})
	return s.jobs
}

// Series starts the series of job j in this scrape; their label pairs
// are shared with the other collectors and the next collections.
func (s *Scrape) Series(j *discovery.Job) *JobSeries { return s.pairs.Job(j) }

// Usage returns the job's cgroup usage in this scrape, reading it on the
// first call of any collector.
func (s *Scrape) Usage(j *discovery.Job) *Usage { return s.UsageFrom(j, nil) }

// UsageFrom is Usage for a collector that reads the job's files itself:
// when it asks first, the usage is read through f, whose open directories
// it then goes on using (one open of the job directory, not two).
func (s *Scrape) UsageFrom(j *discovery.Job, f *cgroupfs.Files) *Usage {
	s.usageMu.Lock()
	if s.usageOf == nil {
		s.usageOf = map[*discovery.Job]*usageCell{}
	}
	c := s.usageOf[j]
	if c == nil {
		c = &usageCell{}
		s.usageOf[j] = c
	}
	s.usageMu.Unlock()
	c.once.Do(func() { c.u = s.usage.read(s, j, f) })
	return c.u
}

// GPU returns this scrape's GPU reading, taken on the first call of any
// collector; nil (and no error) when the node has no GPU source.
func (s *Scrape) GPU() (*GPUReading, error) {
	s.gpuOnce.Do(func() {
		if s.gpu != nil {
			s.gpuRead, s.gpuReadErr = s.gpu.Read(s)
		}
	})
	return s.gpuRead, s.gpuReadErr
}

// Problem reports bad input: the first time per cause it is logged, each
// time it is counted in jobscope_collector_errors_total.
func (s *Scrape) Problem(cause string, err error) { s.problems.Report(s.name, cause, err) }

// protect runs fn, turning a panic into a problem; it reports whether fn
// returned normally.
func (s *Scrape) protect(fn func()) (ok bool) {
	defer func() {
		if p := recover(); p != nil {
			s.panicked.Store(true)
			s.Problem("panic", fmt.Errorf("%v\n%s", p, debug.Stack()))
			ok = false
		}
	}()
	fn()
	return true
}
