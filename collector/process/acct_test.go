// SPDX-License-Identifier: Apache-2.0

package process

import (
	"math/rand"
	"testing"
)

func acctStep(a *procJobAcct, gen uint64, topN int, procs ...procSample) map[string]uint64 {
	js := &procJobSample{procs: procs}
	a.update(js, gen, topN)
	out := map[string]uint64{}
	for _, v := range a.cpuSeries(nil) {
		out[v.exe] = v.ticks
	}
	return out
}

func TestProcAcctPIDReuseAndExit(t *testing.T) {
	a := newProcJobAcct()
	got := acctStep(a, 1, 5, procSample{key: procKey{pid: 5, start: 100}, exe: "/bin/a", ticks: 500})
	if got["/bin/a"] != 500 {
		t.Fatalf("first scrape: %v", got)
	}
	// pid 5 exited and was reused by another process of the same program.
	got = acctStep(a, 2, 5, procSample{key: procKey{pid: 5, start: 900}, exe: "/bin/a", ticks: 10})
	if got["/bin/a"] != 510 {
		t.Fatalf("pid reuse: %v", got)
	}
	// Everything exited: the counter stays.
	got = acctStep(a, 3, 5)
	if got["/bin/a"] != 510 || len(a.procs) != 0 {
		t.Fatalf("after exit: %v, %d procs tracked", got, len(a.procs))
	}
}

func TestProcAcctExec(t *testing.T) {
	a := newProcJobAcct()
	k := procKey{pid: 7, start: 1}
	acctStep(a, 1, 5, procSample{key: k, exe: "/bin/bash", ticks: 30})
	// exec keeps pid and start time; the time so far stays with bash.
	got := acctStep(a, 2, 5, procSample{key: k, exe: "/opt/app", ticks: 130})
	if got["/bin/bash"] != 30 || got["/opt/app"] != 100 {
		t.Fatalf("exec: %v", got)
	}
	// A zombie (exe unreadable) keeps its last known executable.
	got = acctStep(a, 3, 5, procSample{key: k, ticks: 150})
	if got["/opt/app"] != 120 || got[procUnknownExe] != 0 {
		t.Fatalf("zombie: %v", got)
	}
}

func TestProcAcctTopNChurn(t *testing.T) {
	a := newProcJobAcct()
	p := func(pid int, exe string, ticks uint64) procSample {
		return procSample{key: procKey{pid: pid, start: 1}, exe: exe, ticks: ticks}
	}
	got := acctStep(a, 1, 1, p(1, "/bin/small", 50), p(2, "/bin/big", 10))
	if got["/bin/small"] != 50 || got[procOtherExe] != 10 {
		t.Fatalf("scrape 1: %v", got)
	}
	// big overtakes small by more than the margin: it gets the series from
	// here; what it did before stays in other, small's growth goes to other.
	got = acctStep(a, 2, 1, p(1, "/bin/small", 60), p(2, "/bin/big", 1000))
	if _, ok := got["/bin/small"]; ok || got["/bin/big"] != 990 || got[procOtherExe] != 10+10 {
		t.Fatalf("scrape 2: %v", got)
	}
	got = acctStep(a, 3, 1, p(1, "/bin/small", 70), p(2, "/bin/big", 1100))
	if got["/bin/big"] != 1090 || got[procOtherExe] != 30 {
		t.Fatalf("scrape 3: %v", got)
	}
	// Within the margin: no swap.
	a2 := newProcJobAcct()
	acctStep(a2, 1, 1, p(1, "/bin/x", 1000))
	got = acctStep(a2, 2, 1, p(1, "/bin/x", 1000), p(2, "/bin/y", 1050))
	if _, ok := got["/bin/y"]; ok {
		t.Fatalf("swapped within margin: %v", got)
	}
}

// TestProcAcctMonotonic drives random process churn (exits, pid reuse,
// exec, top-N changes) and checks that no series ever decreases while it
// is present, and that nothing is counted twice or lost: the emitted
// values plus the last values of series that stopped equal the CPU the
// processes used up to the scrape that last saw them.
func TestProcAcctMonotonic(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	exes := []string{"/a", "/b", "/c", "/d", "/e", "/f", "/g"}
	type live struct {
		key   procKey
		exe   string
		ticks uint64
	}
	for trial := 0; trial < 200; trial++ {
		a := newProcJobAcct()
		topN := rng.Intn(4)
		var procs []live
		var truth uint64 // ticks of all processes up to their last scrape
		lastSeen := map[procKey]uint64{}
		prev := map[string]uint64{}
		var stopped uint64
		start := uint64(0)
		for gen := uint64(1); gen < 60; gen++ {
			// churn
			for i := 0; i < len(procs); i++ {
				switch rng.Intn(10) {
				case 0: // exit
					procs = append(procs[:i], procs[i+1:]...)
					i--
					continue
				case 1: // exec
					procs[i].exe = exes[rng.Intn(len(exes))]
				}
				procs[i].ticks += uint64(rng.Intn(300))
			}
			for n := rng.Intn(3); n > 0; n-- {
				start++
				pid := rng.Intn(8) // small pid space: reuse happens
				procs = append(procs, live{key: procKey{pid: pid, start: start}, exe: exes[rng.Intn(len(exes))], ticks: uint64(rng.Intn(50))})
			}
			var samples []procSample
			seenPID := map[int]bool{}
			for _, p := range procs {
				if seenPID[p.key.pid] {
					continue // one process per pid at a time
				}
				seenPID[p.key.pid] = true
				samples = append(samples, procSample{key: p.key, exe: p.exe, ticks: p.ticks})
				truth += p.ticks - lastSeen[p.key]
				lastSeen[p.key] = p.ticks
			}
			got := acctStep(a, gen, topN, samples...)
			var sum uint64
			for exe, v := range got {
				if pv, ok := prev[exe]; ok && v < pv {
					t.Fatalf("trial %d scrape %d: %s went down %d -> %d", trial, gen, exe, pv, v)
				}
				sum += v
			}
			for exe, pv := range prev {
				if _, ok := got[exe]; !ok {
					stopped += pv
				}
			}
			if len(got) > topN+1 {
				t.Fatalf("trial %d: %d series for top %d", trial, len(got), topN)
			}
			if sum+stopped != truth {
				t.Fatalf("trial %d scrape %d: emitted %d + stopped %d != used %d", trial, gen, sum, stopped, truth)
			}
			prev = got
		}
	}
}

func TestProcAcctTasks(t *testing.T) {
	a := newProcJobAcct()
	ts := func(tid int, start, vol uint64) procTaskSample {
		s := procTaskSample{key: procTaskKey{pid: 1, tid: tid, start: start}}
		s.ctrs[procCtrVoluntary] = vol
		return s
	}
	a.update(&procJobSample{tasks: []procTaskSample{ts(1, 1, 10), ts(2, 1, 5)}}, 1, 1)
	// thread 2 exited, its tid reused by a new thread.
	a.update(&procJobSample{tasks: []procTaskSample{ts(1, 1, 12), ts(2, 9, 1)}}, 2, 1)
	if got := a.taskTotals()[procCtrVoluntary]; got != 12+5+1 {
		t.Fatalf("voluntary switches: %d", got)
	}
}

func TestProcAcctIOReaping(t *testing.T) {
	a := newProcJobAcct()
	p := func(pid, ppid int, io uint64) procSample {
		return procSample{key: procKey{pid: pid, start: uint64(pid)}, ppid: ppid, exe: "/x", hasIO: true, io: [procNIO]uint64{io, io, io, io}}
	}
	step := func(gen uint64, ps ...procSample) uint64 {
		a.update(&procJobSample{procs: ps}, gen, 1)
		return a.ioTotals()[procIORChar]
	}
	if got := step(1, p(10, 1, 100), p(11, 10, 50)); got != 150 {
		t.Fatalf("scrape 1: %d", got)
	}
	// The child exited and is not reaped yet: the sum dips, the counter holds.
	if got := step(2, p(10, 1, 100)); got != 150 {
		t.Fatalf("before reaping: %d", got)
	}
	// The parent reaped it (60 in all) and did 5 itself: no double count.
	if got := step(3, p(10, 1, 165)); got != 165 {
		t.Fatalf("after reaping: %d", got)
	}
	// A process whose parent is outside the job keeps its last-seen IO.
	if got := step(4, p(10, 1, 165), p(12, 1, 30)); got != 195 {
		t.Fatalf("orphan seen: %d", got)
	}
	if got := step(5, p(10, 1, 165)); got != 195 {
		t.Fatalf("orphan gone: %d", got)
	}
}
