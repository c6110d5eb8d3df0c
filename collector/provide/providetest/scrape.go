// SPDX-License-Identifier: Apache-2.0

// Package providetest holds helpers for the providers' tests: a
// provide.Scrape without the collector framework, which sits above the
// providers and so cannot give them its own.
package providetest

import (
	"context"
	"sync"

	"github.com/jobscope/jobscope/collector/provide"
	"github.com/jobscope/jobscope/discovery"
)

// Scrape is a provide.Scrape over a fixed job list, with the framework's
// memo semantics: Once computes a key's value on its first call only.
type Scrape struct {
	serial uint64
	jobs   []*discovery.Job
	mu     sync.Mutex
	memo   map[any]any
}

var _ provide.Scrape = (*Scrape)(nil)

// NewScrape returns a scrape with the given serial number and jobs.
func NewScrape(serial uint64, jobs ...*discovery.Job) *Scrape {
	return &Scrape{serial: serial, jobs: jobs, memo: map[any]any{}}
}

// Context has no deadline: the providers' tests read fixture trees.
func (s *Scrape) Context() context.Context { return context.Background() }

// Serial is the serial number NewScrape was given.
func (s *Scrape) Serial() uint64 { return s.serial }

// Jobs are the jobs NewScrape was given.
func (s *Scrape) Jobs() []*discovery.Job { return s.jobs }

// Once returns fn's value for key, computing it only on the key's first
// call in this scrape; the lock is held across fn, so concurrent callers
// wait for the one value as they do on the framework's scrape.
func (s *Scrape) Once(key any, fn func() any) any {
	s.mu.Lock()
	defer s.mu.Unlock()
	if v, ok := s.memo[key]; ok {
		return v
	}
	v := fn()
	s.memo[key] = v
	return v
}
