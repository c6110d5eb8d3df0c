package main

import (
	"sync/atomic"
	"testing"
	"time"
)

func TestIdleReleaseWaitsForQuiet(t *testing.T) {
	var fired atomic.Int32
	r := &idleRelease{quiet: 30 * time.Millisecond, release: func() { fired.Add(1) }}

	// Two overlapping scrapes: nothing is released while either runs.
	r.begin()
	r.begin()
	r.end()
	time.Sleep(100 * time.Millisecond)
	if n := fired.Load(); n != 0 {
		t.Fatalf("released %d times while a scrape ran", n)
	}
	r.end()
	waitFired(t, &fired, 1)

	// A scrape that starts within the quiet period postpones the release.
	r.begin()
	r.end()
	time.Sleep(10 * time.Millisecond)
	r.begin()
	time.Sleep(60 * time.Millisecond)
	if n := fired.Load(); n != 1 {
		t.Fatalf("released during a scrape that began in the quiet period (%d)", n)
	}
	r.end()
	waitFired(t, &fired, 2)
	time.Sleep(100 * time.Millisecond)
	if n := fired.Load(); n != 2 {
		t.Fatalf("released %d times for two idle periods", n)
	}
}

func waitFired(t *testing.T, fired *atomic.Int32, want int32) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if fired.Load() == want {
			return
		}
	}
	t.Fatalf("released %d times, want %d", fired.Load(), want)
}
