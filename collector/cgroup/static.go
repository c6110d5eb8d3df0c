// SPDX-License-Identifier: Apache-2.0

package cgroup

import (
	"time"
)

// Limits and cpusets are set by Slurm when a job starts and change only by
// an admin's hand, yet they are a quarter of the files read per job. They
// are re-read every staticTTL, not every scrape.
const staticTTL = time.Minute

// jobState is what the cgroup collector keeps per job between scrapes, in
// a collector.State: the slow-changing files, and the v1 event counts.
type jobState struct {
	static map[string]staticFile // by path
	events v1EventTree
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
	jr.state.Do(func(st *jobState) {
		if f, ok := st.static[path]; ok && jr.now().Sub(f.readAt) < staticTTL {
			b = f.content
		}
	})
	if b != nil {
		return b
	}
	if b = jr.read(dir, name); b != nil {
		f := staticFile{content: append([]byte(nil), b...), readAt: jr.now()}
		jr.state.Do(func(st *jobState) { st.static[path] = f })
	}
	return b
}
