// SPDX-License-Identifier: Apache-2.0

package testutil

import (
	"sync"
	"time"
)

// Clock is a settable clock for code that takes a func() time.Time (the
// Slurm cache, the background squeue, pollers, GPU reconnects), so ages
// and waits in tests and goldens are exact.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// NewClock returns a Clock that reads t until moved with Add.
func NewClock(t time.Time) *Clock { return &Clock{t: t} }

// Now is the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Add moves the clock on by d.
func (c *Clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}
