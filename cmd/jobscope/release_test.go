// SPDX-License-Identifier: Apache-2.0

package main

import (
	"sync/atomic"
	"testing"
	"time"
)

func TestIdleReleaseWaitsForQuiet(t *testing.T) {
	var fired atomic.Int32
	// The quiet period is long next to the steps the test takes inside it
	// (a 10 ms sleep, a call): with 30 ms, a loaded machine overslept the
	// quiet period, the release fired before the second scrape began, and
	// the check of the postponed release failed.
	const quiet = 500 * time.Millisecond
	r := &idleRelease{quiet: quiet, release: func() { fired.Add(1) }}

	// Two overlapping scrapes: nothing is released while either runs.
	r.begin()
	r.begin()
	r.end()
	stillFired(t, &fired, quiet, 0, "while a scrape ran")
	r.end()
	waitFired(t, &fired, 1)

	// A scrape that starts within the quiet period postpones the release.
	r.begin()
	r.end()
	time.Sleep(10 * time.Millisecond)
	r.begin()
	stillFired(t, &fired, quiet, 1, "during a scrape that began in the quiet period")
	r.end()
	waitFired(t, &fired, 2)
	stillFired(t, &fired, quiet, 2, "after two idle periods")
}

// stillFired checks, after more than the quiet period, that the release
// ran want times.
func stillFired(t *testing.T, fired *atomic.Int32, quiet time.Duration, want int32, when string) {
	t.Helper()
	time.Sleep(quiet + 100*time.Millisecond)
	if n := fired.Load(); n != want {
		t.Fatalf("%s: released %d times, want %d", when, n, want)
	}
}

func waitFired(t *testing.T, fired *atomic.Int32, want int32) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if fired.Load() == want {
			return
		}
	}
	t.Fatalf("released %d times, want %d", fired.Load(), want)
}
