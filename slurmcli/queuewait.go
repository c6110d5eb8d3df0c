// SPDX-License-Identifier: Apache-2.0

package slurmcli

import (
	"sort"
	"sync"
	"time"
)

// WaitBuckets are the upper bounds, in seconds, of the queue-wait
// histograms: 1, 5, 15 and 30 minutes, 1, 2, 4 and 8 hours, 1, 2 and 7 days.
// Fixed, so dashboards and rules can name them.
var WaitBuckets = []float64{60, 300, 900, 1800, 3600, 7200, 14400, 28800, 86400, 172800, 604800}

// Histogram counts observations in WaitBuckets (cumulative, as Prometheus
// wants them).
type Histogram struct {
	Count   uint64
	Sum     float64
	Buckets []uint64 // Buckets[i]: observations <= WaitBuckets[i]
}

func (h *Histogram) observe(v float64, n uint64) {
	if h.Buckets == nil {
		h.Buckets = make([]uint64, len(WaitBuckets))
	}
	h.Count += n
	h.Sum += v * float64(n)
	for i := len(WaitBuckets) - 1; i >= 0 && v <= WaitBuckets[i]; i-- {
		h.Buckets[i] += n
	}
}

// Merge adds o's observations to h.
func (h *Histogram) Merge(o *Histogram) {
	if h.Buckets == nil {
		h.Buckets = make([]uint64, len(WaitBuckets))
	}
	h.Count += o.Count
	h.Sum += o.Sum
	for i := range o.Buckets {
		h.Buckets[i] += o.Buckets[i]
	}
}

func (h *Histogram) clone() *Histogram {
	c := *h
	c.Buckets = append([]uint64(nil), h.Buckets...)
	return &c
}

// BucketMap is the cumulative counts keyed by upper bound.
func (h *Histogram) BucketMap() map[float64]uint64 {
	m := make(map[float64]uint64, len(WaitBuckets))
	for i, b := range WaitBuckets {
		if h.Buckets != nil {
			m[b] = h.Buckets[i]
		} else {
			m[b] = 0
		}
	}
	return m
}

// PendingWaits is how long the pending jobs have waited since they were
// submitted, at now, by partition. A record standing for several unsplit
// array tasks counts each of them.
func PendingWaits(jobs []Job, now time.Time) map[string]*Histogram {
	out := map[string]*Histogram{}
	for _, j := range jobs {
		if j.State != "PENDING" || j.Submit.IsZero() {
			continue
		}
		h := out[j.Partition]
		if h == nil {
			h = &Histogram{}
			out[j.Partition] = h
		}
		h.observe(max(now.Sub(j.Submit).Seconds(), 0), uint64(max(j.Count, 1)))
	}
	return out
}

// PartitionQOS groups jobs that started.
type PartitionQOS struct{ Partition, QOS string }

// QueueTracker follows the queue from poll to poll: the wait (start minus
// submit time) of each job that started since jobscope started, observed
// once, and the jobs submitted since then, counted once whether squeue or
// sacct saw them first. Its totals only grow: they are counters.
type QueueTracker struct {
	start     time.Time
	retention time.Duration

	mu      sync.Mutex
	last    time.Time           // the latest squeue poll observed
	polls   uint64              // squeue polls observed
	started map[startKey]uint64 // a start observed -> the latest poll listing it
	waits   map[PartitionQOS]*Histogram

	submitted float64
	jobs      map[string]time.Time // raw id -> last seen
	arrays    map[string]*arraySeen
}

// startKey is one start of a job (a requeued job starts again).
type startKey struct {
	rawID string
	start int64
}

type arraySeen struct {
	tasks    rangeSet
	lastSpec string // the unsplit-tasks string last added
	seen     time.Time
}

// NewQueueTracker counts what happens from start on. retention is how long
// a job is remembered after it was last seen, so that sacct reporting it
// later (its overlap included) does not count it again.
func NewQueueTracker(start time.Time, retention time.Duration) *QueueTracker {
	return &QueueTracker{start: start, retention: retention, started: map[startKey]uint64{},
		waits: map[PartitionQOS]*Histogram{}, jobs: map[string]time.Time{}, arrays: map[string]*arraySeen{}}
}

// ObserveQueue takes one squeue poll, taken at at. A poll already observed
// (same or older time: every concurrent scrape hands in the same one) is
// skipped, so each poll counts once.
func (t *QueueTracker) ObserveQueue(jobs []Job, at time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !at.After(t.last) {
		return
	}
	t.last = at
	t.polls++
	for _, j := range jobs {
		if j.State != "PENDING" && j.Allocated && !j.Start.IsZero() && !j.Start.Before(t.start) {
			k := startKey{j.RawID, j.Start.Unix()}
			_, seen := t.started[k]
			t.started[k] = t.polls
			if !seen {
				h := t.waits[PartitionQOS{j.Partition, j.QOS}]
				if h == nil {
					h = &Histogram{}
					t.waits[PartitionQOS{j.Partition, j.QOS}] = h
				}
				wait := 0.0
				if !j.Submit.IsZero() {
					wait = max(j.Start.Sub(j.Submit).Seconds(), 0)
				}
				h.observe(wait, 1)
			}
		}
		t.submit(j.RawID, j.ArrayJobID, j.ArrayTask, j.Submit, at)
	}
	// A job's start never comes back once squeue stops listing it.
	for k, poll := range t.started {
		if poll != t.polls {
			delete(t.started, k)
		}
	}
	t.prune(at)
}

// ObserveEnded takes the records of a sacct query (the jobs squeue never
// listed: submitted and ended between two polls).
func (t *QueueTracker) ObserveEnded(jobs []SacctJob, loc *time.Location, now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, j := range jobs {
		submit, err := time.ParseInLocation(sacctTime, j.Submit, loc)
		if err != nil {
			continue // no Submit column, or "Unknown": cannot tell when
		}
		arrayJob, task := "", ""
		if base, tasks, ok := sacctArrayRange(j.JobID); ok {
			arrayJob, task = base, tasks
		} else if base, tid, ok := cutArrayTask(j.JobID); ok {
			arrayJob, task = base, tid
		}
		t.submit(j.ID, arrayJob, task, submit, now)
	}
}

// cutArrayTask splits "7_2" into "7" and "2".
func cutArrayTask(id string) (string, string, bool) {
	base, task, ok := splitLast(id, '_')
	if !ok || base == "" || task == "" {
		return "", "", false
	}
	for i := 0; i < len(task); i++ {
		if task[i] < '0' || task[i] > '9' {
			return "", "", false
		}
	}
	return base, task, true
}

func splitLast(s string, sep byte) (string, string, bool) {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == sep {
			return s[:i], s[i+1:], true
		}
	}
	return "", "", false
}

// submit counts a job (or the array tasks of a record) the first time it
// is seen, if it was submitted since the tracker started.
func (t *QueueTracker) submit(rawID, arrayJob, task string, submit, now time.Time) {
	if submit.IsZero() || submit.Before(t.start) {
		return
	}
	if arrayJob == "" || task == "" {
		if _, seen := t.jobs[rawID]; !seen {
			t.submitted++
		}
		t.jobs[rawID] = now
		return
	}
	a := t.arrays[arrayJob]
	if a == nil {
		a = &arraySeen{}
		t.arrays[arrayJob] = a
	}
	a.seen = now
	if task == a.lastSpec {
		return
	}
	n, ok := a.tasks.addSpec(task)
	if !ok {
		n = 1 // an unreadable range is at least one job
	}
	if !isSingleTask(task) {
		a.lastSpec = task
	}
	t.submitted += float64(n)
}

func isSingleTask(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

func (t *QueueTracker) prune(now time.Time) {
	cut := now.Add(-t.retention)
	for id, seen := range t.jobs {
		if seen.Before(cut) {
			delete(t.jobs, id)
		}
	}
	for id, a := range t.arrays {
		if a.seen.Before(cut) {
			delete(t.arrays, id)
		}
	}
}

// QueueTotals is a copy of the tracker's counters.
type QueueTotals struct {
	StartedWaits map[PartitionQOS]*Histogram
	Submitted    float64
}

// Totals copies the counters.
func (t *QueueTracker) Totals() QueueTotals {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := QueueTotals{StartedWaits: make(map[PartitionQOS]*Histogram, len(t.waits)), Submitted: t.submitted}
	for k, h := range t.waits {
		out.StartedWaits[k] = h.clone()
	}
	return out
}

// rangeSet is a set of array task ids kept as sorted, disjoint spans.
type rangeSet struct{ spans [][2]int }

// addSpec adds the tasks of a spec such as "1-3,7,10-20:5%4" and returns
// how many were new; ok is false when the spec cannot be read.
func (r *rangeSet) addSpec(spec string) (added int, ok bool) {
	ok = forEachTaskRange(spec, func(lo, hi, step int) {
		if step == 1 {
			added += r.add(lo, hi)
			return
		}
		for v := lo; v <= hi; v += step {
			added += r.add(v, v)
		}
	})
	return added, ok
}

// add inserts [lo, hi] and returns how many ids were not there yet.
func (r *rangeSet) add(lo, hi int) int {
	covered := 0
	var merged [][2]int
	i := sort.Search(len(r.spans), func(i int) bool { return r.spans[i][1] >= lo-1 })
	merged = append(merged, r.spans[:i]...)
	nlo, nhi := lo, hi
	for ; i < len(r.spans) && r.spans[i][0] <= hi+1; i++ {
		s := r.spans[i]
		covered += max(0, min(s[1], hi)-max(s[0], lo)+1)
		nlo, nhi = min(nlo, s[0]), max(nhi, s[1])
	}
	merged = append(merged, [2]int{nlo, nhi})
	merged = append(merged, r.spans[i:]...)
	r.spans = merged
	return hi - lo + 1 - covered
}
