// SPDX-License-Identifier: Apache-2.0

package main

import (
	"runtime/debug"
	"sync"
	"time"
)

// releaseQuiet is how long no scrape must run before the heap goes back to
// the OS. Prometheus scrapes every 15-60 s: two seconds after the last
// answer the node is idle until the next interval, yet an HA pair's second
// scrape, or a retry, seconds apart, still finds the memory in place.
const releaseQuiet = 2 * time.Second

// idleRelease hands a scrape's garbage back to the OS once the exporter is
// idle. A 512-job scrape allocates ~20 MB; the Go runtime keeps the freed
// pages mapped and returns them only slowly (its background scavenger),
// so between scrapes the daemon held two to three times its live heap
// (RssAnon 11-21 MiB at 512 jobs, depending on where the GC cycle fell).
// One forced GC and scavenge per interval costs a few milliseconds of CPU
// (make bench prints it) against a scrape's ~150 ms.
//
// Node mode only: a controller's heap is hundreds of MB at 50,000 jobs, and
// faulting it back in made its next scrape 16-25% slower (make
// bench-controller: 1.06 -> 1.23-1.27 s, RSS 770 -> 540 MiB), a cost the
// controller, one per cluster, has no reason to pay.
type idleRelease struct {
	mu      sync.Mutex
	running int
	timer   *time.Timer
	quiet   time.Duration
	release func()
}

// newIdleRelease returns a release that does nothing unless on.
func newIdleRelease(quiet time.Duration, on bool) *idleRelease {
	release := func() {}
	if on {
		release = debug.FreeOSMemory
	}
	return &idleRelease{quiet: quiet, release: release}
}

// begin marks a scrape running: no release while it does.
func (r *idleRelease) begin() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.running++
	if r.timer != nil {
		r.timer.Stop()
	}
}

// end marks a scrape done; the last one running arms the release.
func (r *idleRelease) end() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.running--
	if r.running > 0 {
		return
	}
	if r.timer == nil {
		r.timer = time.AfterFunc(r.quiet, r.fire)
	} else {
		r.timer.Reset(r.quiet)
	}
}

func (r *idleRelease) fire() {
	r.mu.Lock()
	busy := r.running > 0
	r.mu.Unlock()
	// A scrape that starts during the release only finds less memory
	// mapped; the check keeps a release from landing mid-scrape when the
	// timer fired as a scrape began.
	if !busy {
		r.release()
	}
}
