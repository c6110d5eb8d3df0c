// SPDX-License-Identifier: Apache-2.0

package slurmcli

import (
	"reflect"
	"testing"
	"time"
)

func TestPendingWaits(t *testing.T) {
	now := time.Date(2026, 11, 25, 0, 13, 36, 0, time.UTC) // the busy capture
	jobs, err := ParseSqueueJSON(openFixture(t, "squeue-busy.json"))
	if err != nil {
		t.Fatal(err)
	}
	got := PendingWaits(jobs, now)
	// batch: afterdrain and the 3-task array, submitted 00:13:22 (14 s);
	// debug: nomem (14 s) and held, submitted 00:12:48 (48 s).
	batch, debug := got["batch"], got["debug"]
	if batch == nil || debug == nil || len(got) != 2 {
		t.Fatalf("partitions %v", got)
	}
	if batch.Count != 4 || batch.Sum != 4*14 || debug.Count != 2 || debug.Sum != 14+48 {
		t.Errorf("batch %+v debug %+v", batch, debug)
	}
	if b := debug.BucketMap(); b[60] != 2 || b[604800] != 2 {
		t.Errorf("debug buckets %v", b)
	}
	h := &Histogram{}
	h.observe(61, 1)
	h.observe(7200, 2)
	h.observe(1e7, 1)
	want := []uint64{0, 1, 1, 1, 1, 3, 3, 3, 3, 3, 3}
	if !reflect.DeepEqual(h.Buckets, want) || h.Count != 4 {
		t.Errorf("buckets %v count %d, want %v and 4 (the 1e7 s one only in +Inf)", h.Buckets, h.Count, want)
	}
}

func TestQueueTracker(t *testing.T) {
	t0 := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	at := t0.Add
	tr := NewQueueTracker(t0, 10*time.Minute)
	run := func(id, part, qos string, submit, start time.Duration) Job {
		return Job{ID: id, RawID: id, State: "RUNNING", Partition: part, QOS: qos, Count: 1, Allocated: true,
			Submit: at(submit), Start: at(start)}
	}
	poll1 := []Job{
		run("1", "batch", "normal", 0, 30*time.Second),            // waited 30 s
		run("2", "batch", "normal", -2*time.Minute, -time.Minute), // started before jobscope
		{ID: "3", RawID: "3", State: "PENDING", Partition: "debug", Count: 1, Submit: at(5 * time.Second)},
		{ID: "11", RawID: "11", ArrayJobID: "11", ArrayTask: "1-3%2", State: "PENDING", Partition: "batch", Count: 3, Submit: at(10 * time.Second)},
		// cancelled while pending: Slurm sets a start time, but it never ran
		{ID: "4", RawID: "4", State: "CANCELLED", Partition: "debug", Count: 1, Submit: at(time.Second), Start: at(20 * time.Second)},
	}
	tr.ObserveQueue(poll1, at(time.Minute))
	tr.ObserveQueue(poll1, at(time.Minute)) // another scrape of the same poll
	tot := tr.Totals()
	if w := tot.StartedWaits[PartitionQOS{"batch", "normal"}]; w == nil || w.Count != 1 || w.Sum != 30 || len(tot.StartedWaits) != 1 {
		t.Fatalf("started waits %+v", tot.StartedWaits)
	}
	// 1, 3, 4 and the array's 3 tasks were submitted since t0; 2 before.
	if tot.Submitted != 6 {
		t.Errorf("submitted %v, want 6", tot.Submitted)
	}
	// Next poll: task 1 of the array split off and started; job 1 again.
	poll2 := []Job{
		run("1", "batch", "normal", 0, 30*time.Second),
		{ID: "11_1", RawID: "12", ArrayJobID: "11", ArrayTask: "1", State: "RUNNING", Partition: "batch", QOS: "high", Count: 1,
			Allocated: true, Submit: at(10 * time.Second), Start: at(70 * time.Second)},
		{ID: "11", RawID: "11", ArrayJobID: "11", ArrayTask: "2-3%2", State: "PENDING", Partition: "batch", Count: 2, Submit: at(10 * time.Second)},
	}
	tr.ObserveQueue(poll2, at(2*time.Minute))
	// sacct: a job that came and went between two polls, the array's
	// unstarted tasks cancelled (one record), and job 1 ended.
	tr.ObserveEnded([]SacctJob{
		{ID: "13", JobID: "13", Submit: "2026-11-25T10:02:10", Count: 1},
		{ID: "11", JobID: "11_[2-3]", Submit: "2026-11-25T10:00:10", Count: 2},
		{ID: "1", JobID: "1", Submit: "2026-11-25T10:00:00", Count: 1},
		{ID: "14", JobID: "14", Submit: "Unknown", Count: 1}, // no submit time: not counted
	}, time.UTC, at(2*time.Minute))
	tot = tr.Totals()
	if tot.Submitted != 7 {
		t.Errorf("submitted %v, want 7 (13 added)", tot.Submitted)
	}
	if w := tot.StartedWaits[PartitionQOS{"batch", "high"}]; w == nil || w.Count != 1 || w.Sum != 60 {
		t.Errorf("array task wait %+v", tot.StartedWaits)
	}
	if w := tot.StartedWaits[PartitionQOS{"batch", "normal"}]; w.Count != 1 {
		t.Errorf("job 1 counted again: %+v", w)
	}
	// Job 1 requeued and started again: a second start, a second wait; not
	// a second submission.
	tr.ObserveQueue([]Job{run("1", "batch", "normal", 0, 3*time.Minute)}, at(3*time.Minute))
	tot = tr.Totals()
	if w := tot.StartedWaits[PartitionQOS{"batch", "normal"}]; w.Count != 2 || w.Sum != 30+180 || tot.Submitted != 7 {
		t.Errorf("requeued: %+v, submitted %v", w, tot.Submitted)
	}
	// Past the retention, forgotten jobs seen again count again: retention
	// must outlast sacct's overlap (Cache.ExtendQueueRetention).
	tr.ObserveQueue(nil, at(30*time.Minute))
	if len(tr.jobs) != 0 || len(tr.arrays) != 0 {
		t.Errorf("not pruned: %v %v", tr.jobs, tr.arrays)
	}
}

func TestRangeSet(t *testing.T) {
	var r rangeSet
	steps := []struct {
		spec  string
		added int
	}{
		{"1-3", 3}, {"2-5", 2}, {"7", 1}, {"6", 1}, {"1-7", 0}, {"10-20:5%2", 3}, {"0-30:5", 3}, {"x", 0},
	}
	for _, s := range steps {
		n, ok := r.addSpec(s.spec)
		if n != s.added || ok != (s.spec != "x") {
			t.Errorf("addSpec(%q) = %d, %v; want %d", s.spec, n, ok, s.added)
		}
	}
	want := [][2]int{{0, 7}, {10, 10}, {15, 15}, {20, 20}, {25, 25}, {30, 30}}
	if !reflect.DeepEqual(r.spans, want) {
		t.Errorf("spans %v, want %v", r.spans, want)
	}
}
