// SPDX-License-Identifier: Apache-2.0

package cgroup

import (
	"time"
)

// Limits and cpusets are set by Slurm when a job starts and change only by
// an admin's hand, yet they are a quarter of the files read per job. They
// are re-read every staticTTL, not every scrape, once the job is settled:
// during a job's first staticTTL in jobscope's view they are read at every
// scrape, because a job's directory exists before slurmstepd writes its
// limits. In VM A the oomer's memory.max was first read as "max" and that
// answer kept for the cache's minute: no memory limit for a job with --mem.
const staticTTL = time.Minute

// jobState is what the cgroup collector keeps per job between scrapes, in
// a collector.State: the slow-changing files, and the v1 event counts.
type jobState struct {
	static    map[string]staticFile // by path
	events    v1EventTree
	firstRead time.Time // the job's first static read: young until staticTTL after it
}

type staticFile struct {
	content []byte
	readAt  time.Time
}

func newJobState() *jobState {
	return &jobState{static: map[string]staticFile{}, events: v1EventTree{last: map[string][2]uint64{}}}
}

// readStatic is read for files that rarely change (limits, cpusets).
func (jr *jobReader) readStatic(dir, name string) []byte {
	path := dir + "/" + name
	var b []byte
	now := jr.now()
	jr.state.Do(func(st *jobState) {
		if st.firstRead.IsZero() {
			st.firstRead = now
		}
		if now.Sub(st.firstRead) < staticTTL {
			return // young: Slurm may not have written it yet
		}
		if f, ok := st.static[path]; ok && now.Sub(f.readAt) < staticTTL {
			b = f.content
		}
	})
	if b != nil {
		return b
	}
	if b = jr.read(dir, name); b != nil {
		f := staticFile{content: append([]byte(nil), b...), readAt: now}
		jr.state.Do(func(st *jobState) { st.static[path] = f })
	}
	return b
}
