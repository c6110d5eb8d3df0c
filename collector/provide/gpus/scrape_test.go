// SPDX-License-Identifier: Apache-2.0

package gpus

import (
	"context"
	"sync"

	"github.com/jobscope/jobscope/discovery"
)

// fakeScrape is a provide.Scrape without the framework (which sits above
// this package).
type fakeScrape struct {
	serial uint64
	jobs   []*discovery.Job
	mu     sync.Mutex
	memo   map[any]any
}

func newFakeScrape(serial uint64, jobs ...*discovery.Job) *fakeScrape {
	return &fakeScrape{serial: serial, jobs: jobs, memo: map[any]any{}}
}

func (s *fakeScrape) Context() context.Context { return context.Background() }
func (s *fakeScrape) Serial() uint64           { return s.serial }
func (s *fakeScrape) Jobs() []*discovery.Job   { return s.jobs }

func (s *fakeScrape) Once(key any, fn func() any) any {
	s.mu.Lock()
	defer s.mu.Unlock()
	if v, ok := s.memo[key]; ok {
		return v
	}
	v := fn()
	s.memo[key] = v
	return v
}
