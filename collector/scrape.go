// SPDX-License-Identifier: Apache-2.0

package collector

import (
	"context"
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"

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

	// memo holds the values providers read once per scrape (Once).
	memoMu sync.Mutex
	memo   map[any]*memoCell

	// pairs shares label pairs across this collection's collectors.
	pairs *PairCache
}

type memoCell struct {
	once sync.Once
	v    any
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
}

// NewScrape builds a scrape for the collector called name (tests).
func NewScrape(ctx context.Context, name string, o ScrapeOptions) *Scrape {
	jobs := o.Jobs
	return (&round{ctx: ctx, serial: o.Serial, problems: o.Problems, listJobs: func() []*discovery.Job { return jobs },
		pairs: NewPairCache()}).view(name)
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

// Once returns fn's value, computed on the first call with key in this
// scrape by any collector; the others wait for it and get the same value.
// Providers read through it what several collectors share (a job's cgroup
// usage, the GPU reading): one read per scrape, whoever asks first.
func (s *Scrape) Once(key any, fn func() any) any {
	s.memoMu.Lock()
	if s.memo == nil {
		s.memo = map[any]*memoCell{}
	}
	c := s.memo[key]
	if c == nil {
		c = &memoCell{}
		s.memo[key] = c
	}
	s.memoMu.Unlock()
	c.once.Do(func() { c.v = fn() })
	return c.v
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
