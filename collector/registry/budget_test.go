// SPDX-License-Identifier: Apache-2.0

package registry

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jobscope/jobscope/internal/testutil"
)

// seriesBudget is the default level's per-job budget (docs/cardinality.md):
// at most this many series per job from the cgroup, process and ebpf
// collectors together, plus one slurm_job_cpu_core_seconds_total per
// allocated core (and, where the ebpf collector saw the job on other cores,
// one series for all of those).
const seriesBudget = 25

// powerBudget bounds the power collector's per-job series (energy by
// source, emissions) on a node with every meter; a node without meters
// has none. docs/cardinality.md counts them apart from seriesBudget.
const powerBudget = 5

const coreMetric = "slurm_job_cpu_core_seconds_total"

// outsideMetric completes the per-core series (CPU time on cores outside
// the cpuset, mostly slurmstepd's start): one per job at most, counted
// with the per-core family, as docs/cardinality.md says.
const outsideMetric = "slurm_job_cpu_outside_cpuset_seconds_total"

// perJob counts a golden's per-job series, per-core ones apart, and the
// allocated cores (slurm_job_cpus) where the golden has them.
type perJob struct {
	series, cores map[string]int
	outside       map[string]int
	cpus          map[string]int
	byName        map[string]map[string]int // job -> metric -> series
}

func countPerJob(t *testing.T, path string, skip func(name string) bool) perJob {
	t.Helper()
	p := perJob{series: map[string]int{}, cores: map[string]int{}, outside: map[string]int{}, cpus: map[string]int{}, byName: map[string]map[string]int{}}
	for _, s := range testutil.GoldenSeries(t, path) {
		job, ok := s.Labels["jobid"]
		if !ok || !strings.HasPrefix(s.Name, "slurm_job_") || skip(s.Name) {
			continue
		}
		if s.Name == outsideMetric {
			p.outside[job]++
			if p.outside[job] > 1 {
				t.Errorf("%s: job %s has %d %s series, want at most 1", path, job, p.outside[job], outsideMetric)
			}
			continue
		}
		if s.Name == coreMetric {
			if len(s.Labels) != 4 || s.Labels["core"] == "" {
				t.Errorf("%s: %s has labels %v: one series per core, nothing else", path, coreMetric, s.Labels)
			}
			p.cores[job]++
			continue
		}
		if s.Name == "slurm_job_cpus" {
			p.cpus[job] = int(s.Value)
		}
		p.series[job]++
		if p.byName[job] == nil {
			p.byName[job] = map[string]int{}
		}
		p.byName[job][s.Name]++
	}
	return p
}

// most is the largest per-job count and the job that has it.
func (p perJob) most() (int, string) {
	n, job := 0, ""
	for j, c := range p.series {
		if c > n {
			n, job = c, j
		}
	}
	return n, job
}

// TestDefaultSeriesBudget counts the series per job in the default
// (basic) goldens. A node runs each collector over the same job, so the
// worst case is the sum over collectors of each one's largest per-job
// count; the process collector's own IO families are off while the ebpf
// collector is loaded (--collector.process.io=auto), so the two node
// configurations are counted apart. Adding a default family pushes a sum
// over the budget and fails here: move it to --metrics.level=full or take
// another out.
func TestDefaultSeriesBudget(t *testing.T) {
	td := filepath.Join("..", "..", "testdata")
	none := func(string) bool { return false }
	var cgroupMax int
	var cgroupWorst string
	for _, node := range []string{"node-v1", "node-v2", "node-v2-sluid"} {
		p := countPerJob(t, filepath.Join(td, node, "metrics.golden"), none)
		n, job := p.most()
		if n > cgroupMax {
			cgroupMax, cgroupWorst = n, fmt.Sprintf("%s job %s %v", node, job, p.byName[job])
		}
		for job, c := range p.cores {
			if p.cpus[job] > 0 && c > p.cpus[job] {
				t.Errorf("%s job %s: %d per-core series for %d allocated cores", node, job, c, p.cpus[job])
			}
		}
	}
	procIO := func(name string) bool {
		return strings.HasPrefix(name, "slurm_job_process_") && strings.Contains(name, "_io_")
	}
	procAll, _ := countPerJob(t, filepath.Join(td, "process", "metrics-defaults.golden"), none).most()
	procNoIO, _ := countPerJob(t, filepath.Join(td, "process", "metrics-defaults.golden"), procIO).most()
	ebpfMax, _ := countPerJob(t, filepath.Join(td, "ebpf", "metrics.golden"), none).most()

	for _, cfg := range []struct {
		name string
		n    int
	}{
		{"cgroup + process (no ebpf: IO from /proc/<pid>/io)", cgroupMax + procAll},
		{"cgroup + process + ebpf (network on)", cgroupMax + procNoIO + ebpfMax},
	} {
		t.Logf("%s: %d series per job, plus one per allocated core", cfg.name, cfg.n)
		if cfg.n > seriesBudget {
			t.Errorf("%s: %d series per job in the default set, budget %d (+ cores); cgroup's worst: %s",
				cfg.name, cfg.n, seriesBudget, cgroupWorst)
		}
	}
	t.Logf("per collector: cgroup %d, process %d (%d without its IO), ebpf %d", cgroupMax, procAll, procNoIO, ebpfMax)

	power, _ := countPerJob(t, filepath.Join(td, "power", "metrics-jobs.golden"), none).most()
	t.Logf("power (every meter): %d series per job", power)
	if power > powerBudget {
		t.Errorf("power collector: %d series per job, budget %d", power, powerBudget)
	}
}
