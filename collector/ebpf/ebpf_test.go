// SPDX-License-Identifier: Apache-2.0

package ebpf

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	promtest "github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/jobscope/jobscope/bpf"
	"github.com/jobscope/jobscope/collector"
	"github.com/jobscope/jobscope/collector/collectortest"
	"github.com/jobscope/jobscope/collector/provide"
	"github.com/jobscope/jobscope/collector/provide/ebpfprogs"
	"github.com/jobscope/jobscope/collector/provide/jobcgroup"
	"github.com/jobscope/jobscope/discovery"
	"github.com/jobscope/jobscope/internal/testutil"
)

// cannedReader hands the collector a fixed snapshot.
type cannedReader struct{ snap *bpf.Snapshot }

func (r cannedReader) Read() (*bpf.Snapshot, error) { return r.snap, nil }

func cannedEBPF(level collector.Level) (*ebpfCollector, []*discovery.Job) {
	jobs := []*discovery.Job{
		{ID: "101", Version: 2, Dir: "/sys/fs/cgroup/system.slice/slurmstepd.scope/job_101", Meta: discovery.Meta{User: "alice", Account: "physics"}},
		{ID: "102", Version: 1, V1: map[string]string{"cpuacct": "/sys/fs/cgroup/cpuacct/slurm_vm/uid_1002/job_102"}, Meta: discovery.Meta{User: "bob", Account: "chem"}},
		// Discovered, but nothing ran in it since attach: no series.
		{ID: "103", Version: 2, Dir: "/sys/fs/cgroup/system.slice/slurmstepd.scope/job_103", Meta: discovery.Meta{User: "alice", Account: "physics"}},
	}
	keys := map[string]bpf.Key{"101": {Hierarchy: 0, CgroupID: 9001}, "102": {Hierarchy: 2, CgroupID: 77}, "103": {Hierarchy: 0, CgroupID: 9003}}
	snap := &bpf.Snapshot{
		Jobs: map[bpf.Key]*bpf.Counters{
			{Hierarchy: 0, CgroupID: 9001}: {CPUNs: []uint64{0, 2_500_000_000, 1_250_000_000, 0}, RChar: 1 << 20, WChar: 3 << 20, SyscR: 40, SyscW: 12, ReadBytes: 4096, WriteBytes: 1 << 20, RxBytes: 5000, TxBytes: 7000, RxPackets: 5, TxPackets: 7, Since: time.Unix(1764000000, 250e6)},
			// Since unknown (zero): no counted-since series.
			{Hierarchy: 2, CgroupID: 77}: {CPUNs: []uint64{500_000_000, 0, 0, 0}, RChar: 10, WChar: 20, SyscR: 1, SyscW: 2},
			// A job cgroup discovery does not list (not Slurm's): not emitted.
			{Hierarchy: 0, CgroupID: 5}: {CPUNs: []uint64{1, 1, 1, 1}},
		},
		Self: bpf.Self{Attached: 7, Entries: 3, Capacity: 1024, Overflows: 1, Seeded: 312, MPTCP: 4, Network: true, StatsOn: true,
			Programs: []bpf.ProgramStats{{Name: "account_switch", Runtime: 1500 * time.Millisecond, RunCount: 10_000_000, RecursionMisses: 2}}},
	}
	c := newEBPFCollector(cannedReader{snap}, func(j *discovery.Job) (bpf.Key, bool) {
		k, ok := keys[j.ID]
		return k, ok
	}, nil, level)
	return c, jobs
}

type scrapeOne struct {
	c    collector.Collector
	jobs []*discovery.Job
}

func (s scrapeOne) Describe(chan<- *prometheus.Desc) {}
func (s scrapeOne) Collect(ch chan<- prometheus.Metric) {
	if err := s.c.Collect(collectortest.Scrape(context.Background(), "ebpf", s.jobs, collector.NewProblems(nil)), ch); err != nil {
		panic(err)
	}
}

// TestEBPFGolden: metrics.golden is the basic level, metrics-full.golden
// the full one.
func TestEBPFGolden(t *testing.T) {
	for level, file := range map[collector.Level]string{collector.LevelBasic: "metrics.golden", collector.LevelFull: "metrics-full.golden"} {
		c, jobs := cannedEBPF(level)
		reg := prometheus.NewPedanticRegistry()
		reg.MustRegister(scrapeOne{c, jobs})
		testutil.Golden(t, filepath.Join("..", "..", "testdata", "ebpf", file), testutil.Exposition(t, reg))
		problems, err := promtest.GatherAndLint(reg)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range problems {
			t.Errorf("lint: %s: %s", p.Metric, p.Text)
		}
	}
}

// TestEBPFUnavailable checks the degrade path: the provider's Start fails
// naming the cause (the set keeps it), and the collector's constructor
// returns it, which the framework logs once, reporting success 0. A pin
// path off bpffs fails with or without root, before any program is loaded.
func TestEBPFUnavailable(t *testing.T) {
	progs := ebpfprogs.New()
	progs.Opts = ebpfprogs.Options{PinPath: filepath.Join(t.TempDir(), "pins"), MaxJobs: 8}
	set := provide.Started(&provide.Env{}, jobcgroup.New(), progs)
	defer set.Close()
	_, err := provide.Need[*ebpfprogs.Provider](set, ebpfprogs.Name)
	if err == nil {
		t.Fatal("loaded with a pin path outside bpffs")
	}
	t.Logf("unavailable as expected: %v", err)
	env := &collector.Env{Providers: set}
	if _, cerr := New(env); !errors.Is(cerr, err) {
		t.Errorf("constructor error %v, want the load error", cerr)
	}
}

// withCpuset scrapes the canned job 101 with the given cpuset.cpus.effective.
func withCpuset(t *testing.T, cpus string) string {
	t.Helper()
	c, jobs := cannedEBPF(collector.LevelBasic)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "cpuset.cpus.effective"), []byte(cpus+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	jobs[0].Dir = dir
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(scrapeOne{c, jobs[:1]})
	return string(testutil.Exposition(t, reg))
}

// Allocated cores the job has not run on show as 0; cores it ran on show
// whatever the cpuset says.
func TestEBPFAllocatedIdleCores(t *testing.T) {
	out := withCpuset(t, "1-3")
	for core, want := range map[string]string{"1": "2.5", "2": "1.25", "3": "0"} {
		line := `slurm_job_cpu_core_seconds_total{account="physics",core="` + core + `",jobid="101",user="alice"} ` + want
		if !strings.Contains(out, line+"\n") {
			t.Errorf("missing %s", line)
		}
	}
	if strings.Contains(out, `core="0",jobid="101"`) {
		t.Error("core 0 is neither allocated nor used")
	}
}

// TestEBPFCoresOutsideCpuset is the regression test of the VM finding F5:
// a job whose cgroup ran on cores outside its cpuset (slurmstepd, before
// Slurm wrote the cpuset) had per-core series on those cores. They go into
// one per-job sum instead, so per-core plus it is still all the job's time.
func TestEBPFCoresOutsideCpuset(t *testing.T) {
	// Job 101 ran on cores 1 and 2; its cpuset is core 2 alone.
	out := withCpuset(t, "2")
	for _, line := range []string{
		`slurm_job_cpu_core_seconds_total{account="physics",core="2",jobid="101",user="alice"} 1.25`,
		`slurm_job_cpu_outside_cpuset_seconds_total{account="physics",jobid="101",user="alice"} 2.5`,
	} {
		if !strings.Contains(out, line+"\n") {
			t.Errorf("missing %s", line)
		}
	}
	for _, core := range []string{"0", "1", "3"} {
		if strings.Contains(out, `core="`+core+`",jobid="101"`) {
			t.Errorf("core %s is outside the cpuset but has a series:\n%s", core, out)
		}
	}
}
