// SPDX-License-Identifier: Apache-2.0

//go:build linux

package bpf

import (
	"crypto/rand"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestLiveCPUAtEachRead is issue 14's regression test: a busy thread pinned
// to one core in a job-shaped v2 cgroup keeps running while it is read five
// times. Each read must include its running slice.
//
// cpu.stat and the task's se.sum_exec_runtime are both advanced by the
// scheduler's update_curr (at ticks and scheduling events), so they are read
// around each Read: cpu.stat just before <= per-core sum <= cpu.stat just
// after (+1 µs, cpu.stat's truncation). Folding at switch-out only, the sum
// trails "before" by the slice in progress (every read of a thread that never
// leaves its core); counting a slice twice would pass "after".
func TestLiveCPUAtEachRead(t *testing.T) {
	needRoot(t)
	mine, cpu := twoCPUs(t)
	v2, _ := mounts(t)
	if v2 == "" {
		t.Skip("no cgroup v2 mount")
	}
	// The reads run on another CPU: a reader woken on the burner's CPU would
	// preempt it, and a switch-out folds the slice in without fold_running.
	pinProcess(t, mine)
	o := loadForTest(t, "", v2, V1None)
	defer o.Close()
	if err := o.LiveErr(); err != nil {
		t.Fatalf("fold_running not loaded on a kernel that should have it: %v", err)
	}
	job := newV2Job(t, v2)
	key, err := DirKey(0, job.jobDir[""])
	if err != nil {
		t.Fatal(err)
	}
	// A shell loop, not a Go helper: the Go runtime's own threads would wake
	// on the same CPU and switch the busy thread out every few milliseconds.
	// The shell is moved into the job while it waits on its stdin, as
	// slurmstepd moves a task before letting it exec: a process that moves
	// itself while running has its slice since its last switch-out charged
	// to the new job, which cpu.stat charges to the old cgroup (docs/ebpf.md).
	const reads = 5
	burnFor := time.Duration(reads+2) * time.Second
	spin := exec.Command("sh", "-c", fmt.Sprintf(`read go && exec taskset -c %d timeout %d sh -c 'while :; do :; done'`,
		cpu, int(burnFor.Seconds())))
	release, err := spin.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := spin.Start(); err != nil {
		t.Fatal(err)
	}
	defer spin.Process.Kill()
	waitSleeping(t, spin.Process.Pid)
	moved := time.Now()
	if err := os.WriteFile(filepath.Join(job.taskDir[""], "cgroup.procs"), []byte(strconv.Itoa(spin.Process.Pid)), 0); err != nil {
		t.Fatal(err)
	}
	if _, err := release.Write([]byte("go\n")); err != nil {
		t.Fatal(err)
	}
	started := time.Now()
	time.Sleep(time.Second)
	worst := 0.0
	for i := range reads {
		before := usageUsec(t, job.jobDir[""]) * 1000
		readAt := time.Now()
		snap, err := o.Read()
		if err != nil {
			t.Fatal(err)
		}
		readTook := time.Since(readAt)
		after := usageUsec(t, job.jobDir[""]) * 1000
		c := snap.Jobs[key]
		if c == nil {
			t.Fatalf("read %d: no entry for the job while its thread runs", i)
		}
		got := sum(c.CPUNs)
		if i == 0 {
			t.Logf("counting began %v after the move", c.Since.Sub(moved))
		}
		// Counting began when the burner first ran in the job. Read
		// converts the programs' boot-clock time with one wall and one
		// boot clock reading, taken one after the other inside it: a
		// thread preempted between them (a busy machine) dates Since
		// earlier by as long, and never by more than Read took.
		if i == 0 && (c.Since.Before(moved.Add(-readTook)) || c.Since.After(time.Now())) {
			t.Errorf("counting began at %v, want between the move (%v) less the read's %v and now", c.Since, moved, readTook)
		}
		// Distance from cpu.stat: 0 between the two reads of it.
		dev := 0.0
		if got < before {
			dev = 100 * float64(before-got) / float64(before)
		} else if got > after+1000 {
			dev = 100 * float64(got-after) / float64(after)
		}
		worst = math.Max(worst, dev)
		t.Logf("read %d: cpu.stat before %d ns, per-core sum %d ns, cpu.stat after %d ns (on cpu%d %d ns)",
			i, before, got, after, cpu, c.CPUNs[cpu])
		if got < before {
			t.Errorf("read %d: per-core sum %d ns trails cpu.stat read before it (%d ns) by %d ns (%.3f%%): the running slice is missing", i, got, before, before-got, dev)
		}
		if got > after+1000 {
			t.Errorf("read %d: per-core sum %d ns exceeds cpu.stat read after it (%d ns) by %d ns (%.3f%%): counted twice", i, got, after, got-after, dev)
		}
		time.Sleep(800 * time.Millisecond)
	}
	if time.Since(started) >= burnFor {
		t.Fatal("the reads took longer than the burner ran: the last ones did not see a running thread")
	}
	t.Logf("worst distance from cpu.stat over %d reads: %.4f%% (limit 1%%; any distance fails above)", reads, worst)
	if err := spin.Wait(); err != nil && !strings.Contains(err.Error(), "exit status 124") {
		t.Fatalf("burner: %v", err)
	}
	time.Sleep(50 * time.Millisecond)
	snap, err := o.Read()
	if err != nil {
		t.Fatal(err)
	}
	closeToUsage(t, "after the burner exited", sum(snap.Jobs[key].CPUNs), usageUsec(t, job.jobDir[""])*1000, 0.0001)
}

// TestJobDirNames checks which v2 job directory names the programs count: a
// SLUID (Slurm 26.05) and job_<id>, and nothing that only resembles them.
func TestJobDirNames(t *testing.T) {
	needRoot(t)
	_, cpu := twoCPUs(t)
	v2, _ := mounts(t)
	if v2 == "" {
		t.Skip("no cgroup v2 mount")
	}
	o := loadForTest(t, "", v2, V1None)
	defer o.Close()
	sluid := randomSLUID(t)
	for _, tc := range []struct {
		name  string
		count bool
	}{
		{sluid, true},
		{"", true}, // job_<id>
		{"job_", false},
		{"job_12a", false},
		{"job_123456789012", true},
		{"job_1234567890123", false}, // longer than discovery reads
		{"jobs_123", false},
		{sluid[:13], false},                  // 12 characters after the s
		{sluid + "0", false},                 // 14
		{"S" + sluid[1:], false},             // upper-case S
		{sluid[:5] + "I" + sluid[6:], false}, // I is not in the alphabet
		{sluid[:5] + "u" + sluid[6:], false}, // lower case
	} {
		job := newV2JobNamed(t, v2, tc.name)
		key, err := DirKey(0, job.jobDir[""])
		if err != nil {
			t.Fatal(err)
		}
		h := startHelper(t, "burn", cpu)
		job.enter(h)
		h.start("100ms")
		h.wait()
		time.Sleep(20 * time.Millisecond)
		snap, err := o.Read()
		if err != nil {
			t.Fatal(err)
		}
		c := snap.Jobs[key]
		switch {
		case tc.count && c == nil:
			t.Errorf("%s: not counted", job.name)
		case tc.count:
			closeTo(t, job.name+" cpu ns vs cpu.stat", sum(c.CPUNs), usageUsec(t, job.jobDir[""])*1000, 0.01)
		case c != nil:
			t.Errorf("%s: counted as a job (%d ns)", job.name, sum(c.CPUNs))
		}
		job.remove()
	}
}

// randomSLUID makes a name as Slurm's sluid2str writes it: 's' and 13
// characters of Crockford's base-32 alphabet.
func randomSLUID(t testing.TB) string {
	const alphabet = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
	b := make([]byte, 13)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	s := []byte{'s'}
	for _, c := range b {
		s = append(s, alphabet[c%32])
	}
	return string(s)
}

// waitSleeping waits until the process blocks (state S in /proc/<pid>/stat),
// so that moving it cannot split a running slice.
func waitSleeping(t *testing.T, pid int) {
	t.Helper()
	for range 500 {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			t.Fatal(err)
		}
		if i := strings.LastIndexByte(string(b), ')'); i > 0 && i+2 < len(b) && b[i+2] == 'S' {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("process %d never blocked on its stdin", pid)
}
