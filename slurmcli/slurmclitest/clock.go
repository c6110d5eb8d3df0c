// SPDX-License-Identifier: Apache-2.0

package slurmclitest

import (
	"sync"
	"time"
)

// Clock is a settable clock for the cache's poll interval and ages
// (slurmcli.CacheConfig.Now), so ages in tests and goldens are exact.
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
