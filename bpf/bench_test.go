// SPDX-License-Identifier: Apache-2.0

//go:build linux

package bpf

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"
)

// TestBenchBPF is `make bench-bpf`: it prints figures and asserts none
// (timings on a shared 2-core machine are noise-prone). Run with
// JOBSCOPE_BENCH_BPF=1 as root. It reports
//   - ns per sched_switch run of account_switch (compare-and-swap on the
//     baseline, for fold_running), of account_switch_plain (plain store, as
//     before fold_running existed; a second instance with its own maps) and
//     of an empty tp_btf program, all attached in the same run, from the
//     kernel's BPF statistics, while `perf bench sched pipe` switches inside
//     a v1 job cgroup;
//   - the cost of one fold_running pass (one read), and
//   - perf bench sched pipe usecs/op with and without jobscope attached,
//     alternating, with medians.
func TestBenchBPF(t *testing.T) {
	if os.Getenv("JOBSCOPE_BENCH_BPF") == "" {
		t.Skip("benchmark: set JOBSCOPE_BENCH_BPF=1 (make bench-bpf)")
	}
	needRoot(t)
	perf, err := exec.LookPath("perf")
	if err != nil {
		t.Skip("perf not installed (apt-get install linux-perf)")
	}
	v2, v1 := mounts(t)
	if v1["cpuacct"] == "" {
		t.Skip("needs the v1 cpuacct hierarchy for the job cgroup")
	}
	loops, rounds := 200000, 7
	if s := os.Getenv("JOBSCOPE_BENCH_LOOPS"); s != "" {
		loops, _ = strconv.Atoi(s)
	}
	job := newV1Job(t, map[string]string{"cpuacct": v1["cpuacct"]})
	pipe := func() float64 {
		// The shell joins the job cgroup, then becomes perf: every switch of
		// the benchmark is a job task's. One CPU: each op is two switches
		// there, with no cross-CPU wakeup noise.
		cmd := exec.Command("sh", "-c", fmt.Sprintf("echo $$ > %s && exec taskset -c 1 %s bench sched pipe -l %d",
			filepath.Join(job.taskDir["cpuacct"], "cgroup.procs"), perf, loops))
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("perf bench: %v\n%s", err, out)
		}
		m := regexp.MustCompile(`([0-9.]+) usecs/op`).FindSubmatch(out)
		if m == nil {
			t.Fatalf("perf bench output: %s", out)
		}
		v, _ := strconv.ParseFloat(string(m[1]), 64)
		return v
	}

	// 1. ns per event, both programs in the same run.
	stats, err := ebpf.EnableStats(uint32(unix.BPF_STATS_RUN_TIME))
	if err != nil {
		t.Fatalf("enable BPF stats: %v", err)
	}
	spec, err := loadBench()
	if err != nil {
		t.Fatal(err)
	}
	var empty benchObjects
	if err := spec.LoadAndAssign(&empty, nil); err != nil {
		t.Fatal(err)
	}
	el, err := link.AttachTracing(link.TracingOptions{Program: empty.EmptySwitch})
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{MaxJobs: 256, V2JobLevel: 3, V1Subsys: V1Cpuacct, V1JobLevel: 3, CgroupV2: v2}
	o, err := Load(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Features = forced{live: errors.New("bench: the plain variant")}
	plain, err := Load(cfg)
	if err != nil {
		t.Fatal(err)
	}
	progs := []*ebpf.Program{empty.EmptySwitch, o.Program(jobscopeProgAccountSwitch), plain.Program(jobscopeProgAccountSwitchPlain)}
	snap := func() []*ebpf.ProgramStats {
		var s []*ebpf.ProgramStats
		for _, p := range progs {
			s = append(s, progStats(t, p))
		}
		return s
	}
	before := snap()
	start := time.Now()
	pipe()
	after := snap()
	perEvent := func(i int) (float64, uint64) {
		n := after[i].RunCount - before[i].RunCount
		return float64(after[i].Runtime-before[i].Runtime) / float64(max(n, 1)), n
	}
	ens, en := perEvent(0)
	ans, an := perEvent(1)
	pns, pn := perEvent(2)
	t.Logf("sched_switch, %d loops of perf bench sched pipe in a job (%.1fs):", loops, time.Since(start).Seconds())
	t.Logf("  empty tp_btf program:   %7.1f ns/event over %d events", ens, en)
	t.Logf("  account_switch:         %7.1f ns/event over %d events (%.2fx empty; target <= 2.5x)", ans, an, ans/ens)
	t.Logf("  account_switch_plain:   %7.1f ns/event over %d events (%.2fx empty)", pns, pn, pns/ens)
	plain.Close()

	// One read's fold_running pass over every task of the machine.
	fold := o.Program(jobscopeProgFoldRunning)
	fb := progStats(t, fold)
	var walls []float64
	for range 21 {
		t0 := time.Now()
		if _, err := o.Read(); err != nil {
			t.Fatal(err)
		}
		walls = append(walls, float64(time.Since(t0).Microseconds()))
	}
	fa := progStats(t, fold)
	visits := (fa.RunCount - fb.RunCount) / 21
	t.Logf("fold_running: %.0f ns per read in BPF (%d tasks visited), whole Read() median %.0f us",
		float64(fa.Runtime-fb.Runtime)/21, visits, median(walls))
	el.Close()
	empty.Close()
	stats.Close()
	o.Close()

	// 2. perf bench with and without, alternating (no BPF stats: they cost
	// ~20 ns per run themselves).
	var with, without []float64
	for i := 0; i < rounds; i++ {
		without = append(without, pipe())
		o, err := Load(Config{MaxJobs: 256, V2JobLevel: 3, V1Subsys: V1Cpuacct, V1JobLevel: 3, CgroupV2: v2})
		if err != nil {
			t.Fatal(err)
		}
		with = append(with, pipe())
		o.Close()
	}
	mw, mo := median(with), median(without)
	t.Logf("perf bench sched pipe -l %d, %d alternating runs each, median usecs/op:", loops, rounds)
	t.Logf("  without jobscope: %.3f %v", mo, without)
	t.Logf("  with jobscope:    %.3f %v (%+.1f%%)", mw, with, 100*(mw-mo)/mo)
}

func progStats(t *testing.T, p *ebpf.Program) *ebpf.ProgramStats {
	t.Helper()
	s, err := p.Stats()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func median(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
