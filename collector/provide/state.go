// SPDX-License-Identifier: Apache-2.0

package provide

import (
	"sync"

	"github.com/jobscope/jobscope/discovery"
)

// StateGrace is the one rule for dropping what collectors keep per job
// between scrapes: a job's value goes once StateGrace scrapes have started
// since the last one that used it. A job missing from one scrape (a
// discovery hiccup) keeps its counters; an ended job leaves nothing behind.
const StateGrace = 3

// Serial is a scrape as State sees it: its serial number (scrapes that
// start later have higher ones).
type Serial interface{ Serial() uint64 }

// State keeps one value per job between scrapes (static files, event
// remainders, process accounting). Scrapes overlap (--web.max-requests,
// HA Prometheus pairs), so:
//   - a job's value is marked with the highest serial of the scrapes that
//     used it, never lowered by an older scrape ending late, and swept by
//     serial, not by which scrape ends first;
//   - each job's value has its own lock, held across a read of the job's
//     files and the update that follows, so a reading cannot be applied
//     after a newer one (that would count an exited process or an ended
//     step twice); the map has one lock of its own.
type State[T any] struct {
	newValue func() *T

	mu   sync.Mutex
	jobs map[discovery.Key]*Entry[T]
}

// Entry is one job's value in a State.
type Entry[T any] struct {
	mu   sync.Mutex
	seen uint64
	v    *T
}

// NewState builds an empty store; newValue makes a job's first value.
func NewState[T any](newValue func() *T) *State[T] {
	return &State[T]{newValue: newValue, jobs: map[discovery.Key]*Entry[T]{}}
}

// Job returns j's entry, creating it, and marks it used by s. Entries are
// keyed by Job.Key: a reused job id starts afresh, and metadata that
// arrives later (the job key among it) keeps the job's counters.
func (st *State[T]) Job(s Serial, j *discovery.Job) *Entry[T] { return st.Key(s, j.Key()) }

// Key is Job by key.
func (st *State[T]) Key(s Serial, key discovery.Key) *Entry[T] {
	st.mu.Lock()
	defer st.mu.Unlock()
	e := st.jobs[key]
	if e == nil {
		e = &Entry[T]{v: st.newValue()}
		st.jobs[key] = e
	}
	e.seen = max(e.seen, s.Serial())
	return e
}

// Do runs fn on the job's value under the job's lock.
func (e *Entry[T]) Do(fn func(v *T)) {
	e.mu.Lock()
	defer e.mu.Unlock()
	fn(e.v)
}

// Sweep drops the values of jobs that no scrape among the last StateGrace
// used. A collector calls it after a scrape that visited every job.
func (st *State[T]) Sweep(s Serial) {
	st.mu.Lock()
	defer st.mu.Unlock()
	for k, e := range st.jobs {
		if e.seen+StateGrace <= s.Serial() {
			delete(st.jobs, k)
		}
	}
}

// Len is the number of jobs with a value (tests, and checks that ended
// jobs leave nothing behind).
func (st *State[T]) Len() int {
	st.mu.Lock()
	defer st.mu.Unlock()
	return len(st.jobs)
}
