// SPDX-License-Identifier: Apache-2.0

//go:build linux

package bpf

import (
	"path/filepath"

	"github.com/cilium/ebpf"
)

// selfSeeded is SELF_SEEDED, the self_counters slot seed_tasks counts in.
const selfSeeded = 2

// resumable says whether the task storage pinned at pinPath holds a
// previous run's baselines that seed_tasks may resume (resume_tasks): the
// map is pinned and that run's seed pass went through (the pinned
// self_counters counted seeded tasks). Only then was every task without a
// baseline forked while no program was attached, so that all it ran belongs
// to its job. Pins a run left without seeding (it failed after making the
// maps) do not qualify: tasks alive then have no baseline and their history
// must stay out. Whether the maps match this build is checked when they are
// loaded; a mismatch replaces them all and the storage is fresh.
func resumable(pinPath string) bool {
	if pinPath == "" || !exists(filepath.Join(pinPath, jobscopeMapTaskLast)) {
		return false
	}
	m, err := ebpf.LoadPinnedMap(filepath.Join(pinPath, jobscopeMapSelfCounters), &ebpf.LoadPinOptions{ReadOnly: true})
	if err != nil {
		// Loading the maps names the cause, if it lasts.
		return false
	}
	defer m.Close()
	n, err := seededTasks(m)
	return err == nil && n > 0
}

// seededTasks sums SELF_SEEDED over the CPUs.
func seededTasks(selfCounters *ebpf.Map) (uint64, error) {
	var per []uint64
	if err := selfCounters.Lookup(uint32(selfSeeded), &per); err != nil {
		return 0, err
	}
	var n uint64
	for _, v := range per {
		n += v
	}
	return n, nil
}

// setResume sets resume_tasks in the object's constants; it must come
// before the maps are made, as .rodata is frozen then.
func setResume(spec *ebpf.CollectionSpec, resume bool) error {
	v := uint32(0)
	if resume {
		v = 1
	}
	return spec.Variables[jobscopeVarResumeTasks].Set(v)
}
