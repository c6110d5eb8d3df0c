// SPDX-License-Identifier: Apache-2.0

package registry

import (
	"bytes"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/jobscope/jobscope/collector"
	"github.com/jobscope/jobscope/collector/cgroup"
	"github.com/jobscope/jobscope/collector/collectortest"
	"github.com/jobscope/jobscope/collector/ebpf"
	"github.com/jobscope/jobscope/collector/provide"
	"github.com/jobscope/jobscope/collector/provide/ebpfprogs"
	"github.com/jobscope/jobscope/collector/provide/jobcgroup"
	"github.com/jobscope/jobscope/discovery"
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
// programs the programs do not load, the error says why and what is lost,
// the ebpf collector is built as unavailable, and the cgroup collector
// keeps per-core CPU from cpuacct (v1 fixture node) with every other series
// of the node intact.
func TestEBPFKernelFallback(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the loader checks capabilities before the feature probes")
	}
	// The v2 fixture node: no v1 hierarchy to look up in /proc/cgroups.
	v2, err := discovery.DetectLayout(filepath.Join("..", "..", "testdata", "node-v2", "cgroup"), "")
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join("..", "..", "testdata", "node-v1")
	progs := ebpfprogs.New()
	progs.Opts = ebpfprogs.Options{MaxJobs: 8, Features: noTaskStorage{}}
	provs := provide.Started(&provide.Env{Layout: v2}, jobcgroup.New(), progs)
	defer provs.Close()
	_, loadErr := provide.Need[*ebpfprogs.Provider](provs, ebpfprogs.Name)
	if loadErr == nil {
		t.Fatal("loaded without task storage")
	}
	for _, want := range []string{"ebpf unsupported", "task storage", "no eBPF counters", "/proc/<pid>/io"} {
		if !strings.Contains(loadErr.Error(), want) {
			t.Errorf("%q does not say %q", loadErr, want)
		}
	}
	t.Logf("the cause, logged at start: %v", loadErr)
	env := &collector.Env{Layout: v2, SysFS: filepath.Join(root, "sys"), Providers: provs}

	// The collectors built as cmd builds them.
	set := collector.RegisterFlags(pflag.NewFlagSet("test", pflag.ContinueOnError), []collector.Factory{cgroup.Factory(), ebpf.Factory()})
	var buildErr error
	cs := set.Build(env, []string{"cgroup", "ebpf"}, func(name string, err error) {
		if name != "ebpf" {
			t.Errorf("%s: %v", name, err)
		}
		buildErr = err
	})
	if !errors.Is(buildErr, loadErr) {
		t.Errorf("ebpf built with %v, want the load error", buildErr)
	}
	// The cause was logged when the collector was built: scrapes count it
	// and log nothing more.
	var logged bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logged, nil))
	problems := collector.NewProblems(log)
	exp := collector.NewExporter(cs, collector.Options{Discoverer: collectortest.Discoverer(t, root), Problems: problems, Logger: log})
	testutil.Exposition(t, collectortest.Gatherer(exp))
	out := string(testutil.Exposition(t, collectortest.Gatherer(exp)))
	if n := problems.Count("ebpf", "unavailable"); n != 2 || logged.Len() != 0 {
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
	if !strings.Contains(out, "slurm_job_cpu_core_seconds_total{") {
		t.Error("no per-core CPU from cpuacct")
	}
}
