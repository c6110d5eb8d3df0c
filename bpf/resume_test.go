// SPDX-License-Identifier: Apache-2.0

//go:build linux

package bpf

import (
	"testing"
	"time"
)

// TestResumeCountsTasksForkedWhileDetached is issue 29's upgrade defect
// without a VM: a package upgrade restarts jobscope (programs detached for
// ~2 s, pinned maps kept) while an array job's script starts a new burner.
// The burner is forked while nothing is attached, so it has no baseline in
// the pinned task storage; the next run must count it from its start, as
// all it ran belongs to its job. Seeding it with its current runtime (the
// fresh-start rule) lost what it ran while detached: the job's per-core sum
// then trails cpu.stat for good.
func TestResumeCountsTasksForkedWhileDetached(t *testing.T) {
	needRoot(t)
	_, cpu := twoCPUs(t)
	v2, _ := mounts(t)
	if v2 == "" {
		t.Skip("no cgroup v2 mount")
	}
	pin := testPinPath(t)
	o := loadForTest(t, pin, v2, V1None)
	defer func() { o.Close() }()
	job := newV2Job(t, v2)
	key, err := DirKey(0, job.jobDir[""])
	if err != nil {
		t.Fatal(err)
	}
	// The job's batch script, moved into the job while it waits.
	script := startHelper(t, "fork", cpu)
	job.enter(script)

	// The old package stops: programs detached, map pins stay. (A build
	// that pins its links keeps them attached instead, TestPinnedLinks-
	// CountWhileDown; an upgrade from one that did not, or a stop followed
	// by Detach, is this case.)
	if err := o.Close(); err != nil {
		t.Fatal(err)
	}
	if err := Detach(pin); err != nil {
		t.Fatal(err)
	}
	script.start("spin")
	if l := script.line(); l != "ready" {
		t.Fatalf("burner said %q, want ready", l)
	}
	script.start("go")
	const detachedCPU = 300 * time.Millisecond
	ranDetached := waitUsage(t, job.jobDir[""], uint64(detachedCPU))

	// The new package starts on the same pins while the burner runs.
	o = loadForTest(t, pin, v2, V1None)
	if !o.Reused() {
		t.Fatal("pinned maps not reused")
	}
	// The burner goes on under the new programs (loading took some of
	// its CPU time already).
	waitUsage(t, job.jobDir[""], usageUsec(t, job.jobDir[""])*1000+uint64(100*time.Millisecond))
	c := stopAndRead(t, o, script, key)
	t.Logf("cpu.stat had %v when the programs were attached again", time.Duration(ranDetached))
	closeToUsage(t, "per-core sum vs cpu.stat", sum(c.CPUNs), usageUsec(t, job.jobDir[""])*1000, 0.01)
}

// TestFreshSeedLeavesHistoryOut: when the task storage is not a previous
// run's that seeded, a task running at attach is seeded with its current
// runtime, and only what it runs afterwards is counted. Two cases: no pins
// at all, and pins left by a run that made its maps but never seeded (it
// failed before attaching): tasks alive then have no baseline although they
// were not forked while detached.
func TestFreshSeedLeavesHistoryOut(t *testing.T) {
	needRoot(t)
	_, cpu := twoCPUs(t)
	v2, _ := mounts(t)
	if v2 == "" {
		t.Skip("no cgroup v2 mount")
	}
	for _, tc := range []struct {
		name      string
		unseeded  bool // pins exist, made by a run that never seeded
		wantReuse bool
	}{
		{"no pins", false, false},
		{"pins never seeded", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pin := testPinPath(t)
			if tc.unseeded {
				makeUnseededPins(t, pin)
			}
			job := newV2Job(t, v2)
			key, err := DirKey(0, job.jobDir[""])
			if err != nil {
				t.Fatal(err)
			}
			burner := startHelper(t, "spin", cpu)
			job.enter(burner)
			burner.start("go")
			// History: CPU time in the job before anything is attached.
			waitUsage(t, job.jobDir[""], uint64(200*time.Millisecond))
			before := usageUsec(t, job.jobDir[""]) * 1000
			o := loadForTest(t, pin, v2, V1None)
			defer o.Close()
			after := usageUsec(t, job.jobDir[""]) * 1000
			if o.Reused() != tc.wantReuse {
				t.Fatalf("reused pins: %v, want %v", o.Reused(), tc.wantReuse)
			}
			waitUsage(t, job.jobDir[""], after+uint64(100*time.Millisecond))
			c := stopAndRead(t, o, burner, key)
			// Seeded somewhere between the two reads of cpu.stat around
			// Load; each read is truncated to a microsecond.
			final := usageUsec(t, job.jobDir[""]) * 1000
			between(t, "per-core sum, history left out", sum(c.CPUNs), final-after-1000, final-before+1000)
		})
	}
}

// makeUnseededPins pins the maps as a run that failed after making them
// would have left them: no seed pass ran on its task storage.
func makeUnseededPins(t *testing.T, pin string) {
	t.Helper()
	if err := EnsurePinDir(pin); err != nil {
		t.Fatal(err)
	}
	o := &Objects{cfg: Config{PinPath: pin, MaxJobs: 256, V2JobLevel: 3}}
	spec, err := o.spec()
	if err != nil {
		t.Fatal(err)
	}
	mc, err := o.loadMaps(spec)
	if err != nil {
		t.Fatal(err)
	}
	mc.Close()
}

// waitUsage waits until the cgroup's cpu.stat shows at least ns of CPU time
// and returns what it shows then. CPU time, not wall time: on a loaded
// machine a burner gets less than its wall time.
func waitUsage(t *testing.T, dir string, ns uint64) uint64 {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		if u := usageUsec(t, dir) * 1000; u >= ns {
			return u
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: less than %v of CPU time after 60 s", dir, time.Duration(ns))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// stopAndRead stops h, lets its last switch-out be counted, and returns
// the job's counters.
func stopAndRead(t *testing.T, o *Objects, h *helper, key Key) *Counters {
	t.Helper()
	h.start("stop")
	h.wait()
	time.Sleep(50 * time.Millisecond)
	snap, err := o.Read()
	if err != nil {
		t.Fatal(err)
	}
	c := snap.Jobs[key]
	if c == nil {
		t.Fatal("no entry for the job")
	}
	return c
}
