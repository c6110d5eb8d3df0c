// SPDX-License-Identifier: Apache-2.0

package slurmcli

import "time"

// queueRetention is how long the submitted-jobs count remembers a job after
// squeue or sacct last showed it, beyond three poll intervals: it must
// outlast sacct's overlap (ExtendQueueRetention), so a job sacct reports
// again is not counted again.
const queueRetention = 15 * time.Minute

// QueueTracker is the one tracker of queue waits and submissions the
// cluster collectors share, started at its first use.
func (c *Cache) QueueTracker() *QueueTracker {
	c.queueOnce.Do(func() {
		c.queue = NewQueueTracker(c.cfg.Now(), queueRetention+3*c.cfg.Interval)
	})
	return c.queue
}

// ExtendQueueRetention makes the tracker remember jobs at least d (plus
// three poll intervals) after it last saw them.
func (c *Cache) ExtendQueueRetention(d time.Duration) {
	t := c.QueueTracker()
	t.mu.Lock()
	t.retention = max(t.retention, d+3*c.cfg.Interval)
	t.mu.Unlock()
}
