package collector

import (
	"bytes"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jobscope/jobscope/internal/testutil"
)

// noTaskStorage is a kernel before 5.12 as the loader's feature probes see
// it; the rest is the running kernel.
type noTaskStorage struct{}

func (noTaskStorage) BTF() error { return nil }
func (noTaskStorage) TaskStorage() error {
	return errors.New("tracing programs cannot use task storage (kernel 5.12+) (forced)")
}
func (noTaskStorage) LiveCPU() error { return errors.New("no bpf_map_lookup_percpu_elem (forced)") }

// TestEBPFKernelFallback: on a kernel without task storage for tracing
// programs the ebpf collector does not start, says why and what is lost,
// and the cgroup collector keeps per-core CPU from cpuacct (v1 fixture
// node) with every other series of the node intact.
func TestEBPFKernelFallback(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the loader checks capabilities before the feature probes")
	}
	// The v2 fixture node: no v1 hierarchy to look up in /proc/cgroups.
	env := &Env{Shared: NewShared(), CgroupFS: filepath.Join("..", "testdata", "node-v2", "cgroup")}
	_, err := NewEBPFCollector(env, EBPFOptions{MaxJobs: 8, Features: noTaskStorage{}})
	if err == nil {
		t.Fatal("loaded without task storage")
	}
	for _, want := range []string{"ebpf unsupported", "task storage", "no eBPF counters", "/proc/<pid>/io"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q does not say %q", err, want)
		}
	}
	t.Logf("the cause, logged at start: %v", err)

	for _, k := range []string{SharedEBPFPerCore, EBPFLoadedKey} {
		if _, ok := env.Shared.Lookup(k); ok {
			t.Errorf("%s set: the other collectors would not fall back", k)
		}
	}

	root := filepath.Join("..", "testdata", "node-v1")
	exp, _ := fixtureExporter(t, "node-v1")
	cg := NewCgroupCollector(CgroupOptions{SysFS: filepath.Join(root, "sys"), PerCoreFromEBPF: perCoreFromEBPF(env)})
	exp.collectors = map[string]Collector{"cgroup": cg, "ebpf": unavailable{err}}
	exp.names = []string{"cgroup", "ebpf"}
	// The cause was logged when the collector was built: scrapes count it
	// and log nothing more.
	var logged bytes.Buffer
	exp.problems = NewProblems(slog.New(slog.NewTextHandler(&logged, nil)))
	testutil.Exposition(t, gatherer(exp))
	out := string(testutil.Exposition(t, gatherer(exp)))
	if n := exp.problems.Count("ebpf", "unavailable"); n != 2 || logged.Len() != 0 {
		t.Errorf("two scrapes: counted %v times (want 2), logged %q (want nothing)", n, logged.String())
	}
	for _, want := range []string{
		`jobscope_scrape_collector_success{collector="ebpf"} 0`,
		`jobscope_scrape_collector_success{collector="cgroup"} 1`,
	} {
		if !strings.Contains(out, want+"\n") {
			t.Errorf("missing %s", want)
		}
	}
	// Everything the cgroup collector gives alone, per-core included.
	golden, err := os.ReadFile(filepath.Join(root, "metrics.golden"))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(golden), "\n") {
		if strings.HasPrefix(l, "slurm_job_") && !strings.Contains(out, l+"\n") {
			t.Errorf("series lost: %s", l)
		}
	}
}
