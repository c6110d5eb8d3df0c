// SPDX-License-Identifier: Apache-2.0

package collector

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/jobscope/jobscope/discovery"
)

// Jobs whose processes have unique long executable paths come and go
// (the adversarial tester's churn: 400 jobs a round, ~4 KB paths): once
// they are gone, the exporter's shared label pairs hold nothing of them,
// and the heap is back to the empty node's.
func TestPairCacheChurnReturnsMemory(t *testing.T) {
	jobs := func(round int) []*discovery.Job {
		js := make([]*discovery.Job, 400)
		for i := range js {
			js[i] = &discovery.Job{ID: fmt.Sprint(round*1000 + i), Meta: discovery.Meta{User: "u", Account: "a"}}
		}
		return js
	}
	exe := NewJobDesc("slurm_job_test_cpu_seconds_total", "Test.", "exe")
	var current []*discovery.Job
	exp := NewExporter(map[string]Collector{"churn": funcCollector(func(s *Scrape, ch chan<- prometheus.Metric) error {
		for _, j := range s.Jobs() {
			js := s.Series(j)
			for k := range 3 {
				ch <- js.Counter(exe, 1, fmt.Sprintf("/scratch/%s/%d/%s", j.ID, k, strings.Repeat("x", 4000)))
				ch <- js.Counter(exe, 1, "/usr/bin/python3") // shared by every job
			}
		}
		return nil
	})}, Options{Jobs: func(context.Context, discovery.Problem) []*discovery.Job { return current }})
	scrape := func() { _ = exp.gather(t.Context()) }
	scrape()
	empty := heapBytes()
	for round := range 12 {
		current = jobs(round)
		scrape()
		scrape()
	}
	if n := exp.pairs.Len(); n == 0 {
		t.Fatal("no pair cached while jobs ran: the test measures nothing")
	}
	current = nil
	scrape()
	scrape()
	after := heapBytes()
	t.Logf("heap: %d bytes on the empty node, %d after the churn; %d pairs held", empty, after, exp.pairs.Len())
	if n := exp.pairs.Len(); n != 0 {
		t.Errorf("%d label pairs held after every job ended", n)
	}
	if after > empty+empty/10 {
		t.Errorf("heap %d bytes after the churn, %d before it: more than 10%% over", after, empty)
	}
}

// heapBytes is the live heap after a full collection.
func heapBytes() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// A generation holds at most pairCacheMax pairs, and long values are never
// cached (they are job-specific).
func TestPairCacheBounded(t *testing.T) {
	c := NewPairCache()
	for i := range 2 * pairCacheMax {
		c.get("exe", fmt.Sprint(i))
	}
	c.get("exe", strings.Repeat("x", pairCacheValueMax+1))
	if n := c.Len(); n != pairCacheMax {
		t.Errorf("%d pairs held, want %d", n, pairCacheMax)
	}
	c.rotate()
	if p, q := c.get("exe", "1"), c.get("exe", "1"); p != q {
		t.Error("a pair of the previous generation was not shared")
	}
	c.rotate()
	c.rotate()
	if n := c.Len(); n != 0 {
		t.Errorf("%d pairs held after two generations unused", n)
	}
}
