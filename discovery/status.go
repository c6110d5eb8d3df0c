// SPDX-License-Identifier: Apache-2.0

package discovery

import (
	"context"
	"log/slog"
	"sync"
)

// skipLog counts skipped job directories and logs the first one of each
// reason, so a broken layout gives one line and a growing counter.
type skipLog struct {
	log *slog.Logger

	mu       sync.Mutex
	totals   map[string]float64
	logged   map[string]bool
	sawOther bool
}

func newSkipLog(log *slog.Logger) *skipLog {
	return &skipLog{log: log, totals: map[string]float64{}, logged: map[string]bool{}}
}

func (s *skipLog) report(reason, path string, count bool) {
	s.mu.Lock()
	first := !s.logged[reason]
	s.logged[reason] = true
	if count {
		s.totals[reason]++
	}
	s.mu.Unlock()
	if first {
		s.log.Warn("job directory skipped: not exported as a job (logged once per reason; counted in jobscope_discovery_skipped_total)",
			"reason", reason, "path", path, "hint", skipHints[reason])
	}
}

// ignored notes, once, a directory beside the job directories that holds
// no step and so is no job.
func (s *skipLog) ignored(path string) {
	s.mu.Lock()
	first := !s.sawOther
	s.sawOther = true
	s.mu.Unlock()
	if first {
		s.log.Info("ignoring a directory in a Slurm cgroup scope that holds no step_* directory (logged once)", "path", path)
	}
}

func (s *skipLog) snapshot() map[string]float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]float64, len(s.totals))
	for k, v := range s.totals {
		out[k] = v
	}
	return out
}

// Status is discovery's state, for jobscope's own metrics and the landing
// page.
type Status struct {
	Layout Layout
	// Last is what the latest pass saw.
	Last ScanStats
	// Skipped counts skipped job directories since start, by reason.
	Skipped map[string]float64
	Queue   QueueStatus
}

// Status returns discovery's state now.
func (d *Discoverer) Status() Status {
	d.mu.Lock()
	last := d.last
	d.mu.Unlock()
	st := Status{Layout: d.cfg.Layout, Last: last, Skipped: d.skips.snapshot()}
	if d.queue != nil {
		st.Queue = d.queue.status()
	}
	return st
}

// Survey runs one pass without reading metadata: what a start-up log line
// says about the node (scopes and job directories by naming scheme).
func (d *Discoverer) Survey() ScanStats {
	s := d.newScan(context.Background())
	s.survey = true
	if d.cfg.Layout.V2 != "" {
		s.findV2()
	}
	s.findV1()
	d.mu.Lock()
	d.last = s.stats
	d.mu.Unlock()
	return s.stats
}
