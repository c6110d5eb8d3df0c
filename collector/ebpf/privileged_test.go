// SPDX-License-Identifier: Apache-2.0

package ebpf

import (
	"context"
	"fmt"
	"math"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/jobscope/jobscope/collector"
	"github.com/jobscope/jobscope/collector/provide"
	"github.com/jobscope/jobscope/collector/provide/ebpfprogs"
	"github.com/jobscope/jobscope/collector/provide/jobcgroup"
	"github.com/jobscope/jobscope/discovery"
)

// TestEBPFCollectorPrivileged loads the real programs, runs a burner in a
// v1 and a v2 job-shaped cgroup and in a v2 job directory named by its SLUID
// (Slurm 26.05), and checks that the collector, joined to discovery's jobs,
// reports the kernel's CPU time for each job. (bpf's own tests check every
// counter against the kernel in detail.)
func TestEBPFCollectorPrivileged(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: loads BPF programs and creates cgroups")
	}
	if _, err := os.Stat("/sys/kernel/btf/vmlinux"); err != nil {
		t.Skip("kernel has no BTF")
	}
	layout, err := discovery.DetectLayout("", "/proc")
	if err != nil || layout.V1["cpuacct"] == "" || layout.V2 == "" {
		t.Skipf("needs a hybrid host with v1 cpuacct and a v2 mount (layout %v, %v)", layout, err)
	}
	id1 := strconv.Itoa(4_100_000_000 + rand.Intn(1_000_000))
	id2 := strconv.Itoa(4_200_000_000 + rand.Intn(1_000_000))
	id3 := strconv.Itoa(4_300_000_000 + rand.Intn(1_000_000))
	v1Job := filepath.Join(layout.V1["cpuacct"], "slurm_jstest", "uid_0", "job_"+id1)
	v2Job := filepath.Join(layout.V2, "system.slice", "slurmstepd.scope", "job_"+id2)
	sluid := fmt.Sprintf("s%013X", rand.Int63n(1<<40)) // hex digits are in Slurm's base-32 alphabet
	sluidJob := filepath.Join(layout.V2, "system.slice", "node1_slurmstepd.scope", sluid)
	var made []string
	mk := func(p string) {
		// Record each directory this test creates, to remove it deepest first.
		var parts []string
		for d := p; !ebpfTestExists(d); d = filepath.Dir(d) {
			parts = append([]string{d}, parts...)
		}
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		made = append(made, parts...)
	}
	t.Cleanup(func() {
		for i := len(made) - 1; i >= 0; i-- {
			os.Remove(made[i])
		}
	})
	mk(filepath.Join(v1Job, "step_0", "task_0"))
	mk(filepath.Join(v2Job, "step_0", "user", "task_0"))
	mk(filepath.Join(sluidJob, "step_0", "user", "task_0"))

	progs := ebpfprogs.New()
	progs.Opts = ebpfprogs.Options{MaxJobs: 64, Network: true, V1Controller: "cpuacct"}
	set := provide.Started(&provide.Env{ProcFS: "/proc", Layout: layout}, jobcgroup.New(), progs)
	if _, err := provide.Need[*ebpfprogs.Provider](set, ebpfprogs.Name); err != nil {
		t.Fatalf("loading: %v", err)
	}
	defer set.Close()
	env := &collector.Env{ProcFS: "/proc", Layout: layout, Providers: set}
	c, err := New(env)
	if err != nil {
		t.Fatal(err)
	}
	disc := discovery.New(discovery.Config{Layout: layout, ProcFS: "/proc"})

	for _, task := range []string{filepath.Join(v1Job, "step_0", "task_0"), filepath.Join(v2Job, "step_0", "user", "task_0"),
		filepath.Join(sluidJob, "step_0", "user", "task_0")} {
		script := fmt.Sprintf(`echo $$ > %s/cgroup.procs && exec taskset -c 1 timeout 0.3 sh -c 'while :; do :; done'`, task)
		if out, err := exec.Command("sh", "-c", script).CombinedOutput(); err != nil && !strings.Contains(err.Error(), "exit status 124") {
			t.Fatalf("burner: %v %s", err, out)
		}
	}
	reg := prometheus.NewPedanticRegistry()
	jobs := disc.Discover(context.Background(), func(string, error) {})
	// The job as discovery gives a SLUID directory (with its numeric id
	// resolved), where this discovery does not list it yet.
	if !slices.ContainsFunc(jobs, func(j *discovery.Job) bool { return j.Dir == sluidJob }) {
		jobs = append(jobs, &discovery.Job{ID: id3, Version: 2, Dir: sluidJob})
	}
	reg.MustRegister(scrapeOne{c, jobs})
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != "slurm_job_cpu_core_seconds_total" {
			continue
		}
		for _, m := range mf.Metric {
			for _, l := range m.Label {
				if l.GetName() == "jobid" {
					got[l.GetValue()] += m.Counter.GetValue()
				}
			}
		}
	}
	v1usage, err := os.ReadFile(filepath.Join(v1Job, "cpuacct.usage"))
	if err != nil {
		t.Fatal(err)
	}
	want1, _ := strconv.ParseFloat(strings.TrimSpace(string(v1usage)), 64)
	usage := func(dir string) float64 {
		stat, _ := os.ReadFile(filepath.Join(dir, "cpu.stat"))
		for _, l := range strings.Split(string(stat), "\n") {
			if v, ok := strings.CutPrefix(l, "usage_usec "); ok {
				f, _ := strconv.ParseFloat(v, 64)
				return f / 1e6
			}
		}
		return 0
	}
	for _, chk := range []struct {
		id   string
		want float64
	}{{id1, want1 / 1e9}, {id2, usage(v2Job)}, {id3, usage(sluidJob)}} {
		t.Logf("job %s: %.6f s from ebpf, %.6f s from the cgroup", chk.id, got[chk.id], chk.want)
		if chk.want == 0 || math.Abs(got[chk.id]-chk.want) > 0.01*chk.want {
			t.Errorf("job %s: ebpf %.6f s, cgroup %.6f s", chk.id, got[chk.id], chk.want)
		}
	}
}

func ebpfTestExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
