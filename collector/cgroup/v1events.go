// SPDX-License-Identifier: Apache-2.0

package cgroup

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/jobscope/jobscope/cgroupfs"
	"github.com/jobscope/jobscope/discovery"
)

// cgroup v1 counts an OOM kill (memory.oom_control oom_kill) and a failed
// charge (memory.failcnt) only in the one memory cgroup where it happened:
// under Slurm usually step_*/task_*, not the job directory. A job's count is
// the sum over its tree; directories of ended steps leave their last counts
// in a per-job remainder so that the sum never goes down.

const (
	v1OOMKill = iota
	v1Failcnt
)

type v1EventTree struct {
	last map[string][2]uint64 // per directory: oom_kill, failcnt
	gone [2]uint64            // what ended steps had counted
}

// v1MemoryEvents emits oom_kill and max (failcnt) summed over the job's
// memory cgroup tree.
func (jr *jobReader) v1MemoryEvents(jobDir string) {
	// Reading and folding happen under the job's lock: a scrape that read
	// a step before it ended must not fold its counts in after another
	// scrape moved them to the remainder.
	jr.state.Do(func(st *jobState) { jr.foldV1Events(&st.events, jobDir) })
}

func (jr *jobReader) foldV1Events(t *v1EventTree, jobDir string) {
	cur := make(map[string][2]uint64, 8)
	var ok bool
	for i, dir := range append([]string{jobDir}, discovery.StepDirs(jobDir)...) {
		var v [2]uint64
		// A step may end between listing and reading: its absence is
		// silent and its last counts move to the remainder below.
		b, errOOM := jr.r.Read(dir + "/memory.oom_control")
		if errOOM == nil {
			_ = cgroupfs.ParseFlatKeyed(b, func(k []byte, n uint64) {
				if string(k) == "oom_kill" {
					v[v1OOMKill] = n
				}
			})
		}
		errFail := errNotRead
		if jr.out.Keeps(jr.d.memEvents, "max") {
			b, errFail = jr.r.Read(dir + "/memory.failcnt")
		}
		if errFail == nil {
			if n, err := cgroupfs.ParseUint(b); err == nil {
				v[v1Failcnt] = n
			} else if i == 0 {
				jr.malformed(dir, "memory.failcnt", err)
			}
		}
		if errOOM == nil || errFail == nil {
			cur[dir] = v
			ok = ok || i == 0
		}
	}
	if !ok {
		return // the job directory itself is gone or unreadable
	}
	total := t.gone
	for dir, prev := range t.last {
		now, still := cur[dir]
		for k := range prev {
			// A vanished directory, or one recreated under the same name
			// (its counter restarted), hands its last count to the remainder.
			if !still || now[k] < prev[k] {
				t.gone[k] += prev[k]
				total[k] += prev[k]
			}
		}
	}
	for _, v := range cur {
		total[v1OOMKill] += v[v1OOMKill]
		total[v1Failcnt] += v[v1Failcnt]
	}
	t.last = cur
	jr.emit(jr.d.memEvents, prometheus.CounterValue, float64(total[v1OOMKill]), "oom_kill")
	jr.emit(jr.d.memEvents, prometheus.CounterValue, float64(total[v1Failcnt]), "max")
}

// errNotRead stands for memory.failcnt at the basic level, which has no
// series for it.
var errNotRead = errors.New("not read at --metrics.level=basic")
