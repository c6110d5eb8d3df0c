// SPDX-License-Identifier: Apache-2.0

//go:build linux

package bpf

import (
	"slices"
	"testing"
	"time"
)

// TestPinnedLinksCountWhileDown is issue 29's upgrade defect: while
// jobscope restarts (20 s under TCG), an array job's short tasks start and
// end; with the programs detached, all they ran was lost and the job's
// per-core sum trailed cpu.stat for good. The links are pinned now: the
// programs go on counting while no jobscope runs, and the next run takes
// them over.
func TestPinnedLinksCountWhileDown(t *testing.T) {
	needRoot(t)
	_, cpu := twoCPUs(t)
	v2, _ := mounts(t)
	if v2 == "" {
		t.Skip("no cgroup v2 mount")
	}
	pin := testPinPath(t)
	o := loadForTest(t, pin, v2, V1None)
	hooks := PinnedLinks(pin)
	if o.NetworkErr() == nil && len(hooks) != len(allHooks) || len(hooks) < 2 {
		t.Fatalf("pinned links %v (network: %v)", hooks, o.NetworkErr())
	}
	job := newV2Job(t, v2)
	key, err := DirKey(0, job.jobDir[""])
	if err != nil {
		t.Fatal(err)
	}
	// jobscope stops: nothing of it runs.
	if err := o.Close(); err != nil {
		t.Fatal(err)
	}
	// A task of the job starts, burns and ends while it is down.
	burn := startHelper(t, "burn", cpu)
	job.enter(burn)
	burn.start("300ms")
	burn.wait()
	ranDown := usageUsec(t, job.jobDir[""]) * 1000
	if ranDown < uint64(250*time.Millisecond) {
		t.Fatalf("the burner ran %v", time.Duration(ranDown))
	}

	o = loadForTest(t, pin, v2, V1None)
	defer o.Close()
	if got := o.HandedOver(); got != len(hooks) {
		t.Errorf("handed over %d hooks, want the %d pinned (%v)", got, len(hooks), hooks)
	}
	snap, err := o.Read()
	if err != nil {
		t.Fatal(err)
	}
	c := snap.Jobs[key]
	if c == nil {
		t.Fatalf("the job has no counters: what it ran while jobscope was down was lost")
	}
	closeToUsage(t, "per-core sum vs cpu.stat (all of it run while down)", sum(c.CPUNs), usageUsec(t, job.jobDir[""])*1000, 0.01)
	if got := PinnedLinks(pin); !slices.Equal(got, hooks) {
		t.Errorf("pinned links after the handover %v, want %v", got, hooks)
	}
}

// TestHandoverCountsOnce: during a handover the previous run's tracing
// programs and this run's both run (the old one until its last holder lets
// go), and the cgroup links are updated in place. Here the first run never
// lets go: both sched_switch programs run for the whole workload, and CPU,
// IO and network must still be counted once (claim_runtime's
// compare-and-swap; the IO baselines; one program per cgroup hook).
func TestHandoverCountsOnce(t *testing.T) {
	needRoot(t)
	c0, c1 := twoCPUs(t)
	v2, _ := mounts(t)
	if v2 == "" {
		t.Skip("no cgroup v2 mount")
	}
	pin := testPinPath(t)
	first := loadForTest(t, pin, v2, V1None)
	defer first.Close()
	o := loadForTest(t, pin, v2, V1None)
	defer o.Close()
	if o.HandedOver() < 2 {
		t.Fatalf("handed over %d hooks", o.HandedOver())
	}
	a, b := newV2Job(t, v2), newV2Job(t, v2)
	ka, err := DirKey(0, a.jobDir[""])
	if err != nil {
		t.Fatal(err)
	}
	kb, _ := DirKey(0, b.jobDir[""])
	ip := workload(t, a, b, c1, c0)
	snap, err := o.Read()
	if err != nil {
		t.Fatal(err)
	}
	ca, cb := snap.Jobs[ka], snap.Jobs[kb]
	if ca == nil || cb == nil {
		t.Fatalf("job entries missing: a=%v b=%v", ca != nil, cb != nil)
	}
	closeTo(t, "a cpu ns vs cpu.stat", sum(ca.CPUNs), usageUsec(t, a.jobDir[""])*1000, 0.01)
	closeTo(t, "b cpu ns vs cpu.stat", sum(cb.CPUNs), usageUsec(t, b.jobDir[""])*1000, 0.01)
	if o.NetworkErr() != nil {
		t.Logf("network programs off: %v", o.NetworkErr())
	}
	checkIONet(t, ca, cb, ip)
}

// TestDetachAndUnusedHooks: Detach stops the pinned programs (a task that
// runs after it is not counted by anything), and a run that does not attach
// the network programs removes the network links a previous run pinned.
func TestDetachAndUnusedHooks(t *testing.T) {
	needRoot(t)
	_, cpu := twoCPUs(t)
	v2, _ := mounts(t)
	if v2 == "" {
		t.Skip("no cgroup v2 mount")
	}
	pin := testPinPath(t)
	o := loadForTest(t, pin, v2, V1None)
	if o.NetworkErr() != nil {
		o.Close()
		t.Skipf("network programs off: %v", o.NetworkErr())
	}
	o.Close()
	// The network off now: only the CPU hooks stay pinned.
	o, err := Load(Config{PinPath: pin, MaxJobs: 256, V2JobLevel: 3})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := PinnedLinks(pin), []string{hookSchedSwitch, hookCgroupRmdir}; !slices.Equal(got, want) {
		t.Errorf("pinned links with the network off: %v, want %v", got, want)
	}
	o.Close()

	if err := Detach(pin); err != nil {
		t.Fatal(err)
	}
	if got := PinnedLinks(pin); len(got) != 0 {
		t.Fatalf("pinned links after Detach: %v", got)
	}
	job := newV2Job(t, v2)
	key, err := DirKey(0, job.jobDir[""])
	if err != nil {
		t.Fatal(err)
	}
	burn := startHelper(t, "burn", cpu)
	job.enter(burn)
	burn.start("200ms")
	burn.wait()
	o = loadForTest(t, pin, v2, V1None)
	defer o.Close()
	if o.HandedOver() != 0 {
		t.Errorf("handed over %d hooks after Detach", o.HandedOver())
	}
	snap, err := o.Read()
	if err != nil {
		t.Fatal(err)
	}
	if c := snap.Jobs[key]; c != nil && sum(c.CPUNs) != 0 {
		t.Errorf("a task that ran after Detach was counted: %d ns", sum(c.CPUNs))
	}
}
