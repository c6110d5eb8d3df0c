// SPDX-License-Identifier: Apache-2.0

package gpu

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	promtest "github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/jobscope/jobscope/collector"
	"github.com/jobscope/jobscope/collector/collectortest"
	"github.com/jobscope/jobscope/collector/provide"
	"github.com/jobscope/jobscope/collector/provide/gpus"
	"github.com/jobscope/jobscope/discovery"
	"github.com/jobscope/jobscope/gpu"
	"github.com/jobscope/jobscope/internal/testutil"
)

// gpuFixture builds an exporter with only the gpu collector over
// testdata/gpu/<node> and the given backend.
func gpuFixture(t testing.TB, node string, open func(gpu.Config) (gpu.Backend, error)) (*collector.Exporter, *collector.Problems) {
	t.Helper()
	root := filepath.Join("..", "..", "testdata", "gpu", node)
	disc := collectortest.Discoverer(t, root)
	env := &collector.Env{ProcFS: filepath.Join(root, "proc")}
	c, err := build(env, gpus.Options{Backend: "auto", MappingDir: filepath.Join(root, "mapping"), Open: open})
	if err != nil {
		t.Fatal(err)
	}
	problems := collector.NewProblems(nil)
	exp := collector.NewExporter(map[string]collector.Collector{"gpu": c}, collector.Options{Discoverer: disc, Problems: problems, Info: collector.BuildInfo{Version: "test", Revision: "test", GoVersion: "go"}})
	return exp, problems
}

// build starts the GPU provider onto env and builds the collector, as cmd
// does.
func build(env *collector.Env, o gpus.Options) (collector.Collector, error) {
	p := gpus.New()
	p.Opts = o
	env.Providers = provide.Started(&provide.Env{ProcFS: env.ProcFS}, p)
	return New(env)
}

// fakeDCGM opens testdata/gpu/dcgm-fake.json as the DCGM backend that
// "auto" picks first.
func fakeDCGM(t testing.TB) (*gpu.Fake, func(gpu.Config) (gpu.Backend, error)) {
	t.Helper()
	f, err := gpu.OpenFake(filepath.Join("..", "..", "testdata", "gpu", "dcgm-fake.json"))
	if err != nil {
		t.Fatal(err)
	}
	s, _ := f.Snapshot(context.Background())
	dcgm := gpu.NewFake("dcgm", *s)
	return dcgm, func(cfg gpu.Config) (gpu.Backend, error) {
		cfg.OpenDCGM = func(*slog.Logger) (gpu.Backend, error) { return dcgm, nil }
		return gpu.Open(cfg)
	}
}

func lint(t *testing.T, g prometheus.Gatherer) {
	t.Helper()
	problems, err := promtest.GatherAndLint(g)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
}

// The fake DCGM carries every field (profiling included), three Xid events
// and one failed call; the node has every mapping method and a conflict.
func TestGPUGoldenDCGM(t *testing.T) {
	_, open := fakeDCGM(t)
	exp, problems := gpuFixture(t, "node-v2", open)
	g := collectortest.Gatherer(exp)
	testutil.Golden(t, filepath.Join("..", "..", "testdata", "gpu", "dcgm-v2.golden"), testutil.Exposition(t, g))
	lint(t, g)
	for cause, want := range map[string]float64{"mapping_conflict": 2, "dcgm_GetPowerUsage": 2} {
		if got := problems.Count("gpu", cause); got != want {
			t.Errorf("problem %s counted %v times, want %v (two scrapes)", cause, got, want)
		}
	}
}

func TestGPUDevicesCgroupV1(t *testing.T) {
	_, open := fakeDCGM(t)
	exp, _ := gpuFixture(t, "node-v1", open)
	g := collectortest.Gatherer(exp)
	out := string(testutil.Exposition(t, g))
	for _, gpuIdx := range []string{"5", "6"} {
		want := fmt.Sprintf(`slurm_job_gpu_info{account="physics",gpu="%s",jobid="400",method="devices_cgroup",mig_uuid="",model="NVIDIA A100-SXM4-40GB",user="alice",uuid="GPU-00000000-0000-4000-8000-00000000000%s"} 1`, gpuIdx, gpuIdx)
		if !strings.Contains(out, want) {
			t.Errorf("missing %s", want)
		}
	}
	if strings.Count(out, "slurm_job_gpu_info{") != 2 {
		t.Errorf("want exactly GPUs 5 and 6 for job 400:\n%s", out)
	}
}

// The demo fixture works with the demo node (`make demo`).
func TestGPUDemoFixture(t *testing.T) {
	root := filepath.Join("..", "..", "testdata", "demo")
	layout, err := discovery.DetectLayout(filepath.Join(root, "cgroup"), "")
	if err != nil {
		t.Skipf("demo node not present: %v", err)
	}
	disc := discovery.New(discovery.Config{Layout: layout, ProcFS: filepath.Join(root, "proc"), PropsDir: filepath.Join(root, "props"),
		LookupUser: func(int) (string, error) { return "", errors.New("none") }, ProcOwner: collectortest.FixtureOwner})
	env := &collector.Env{ProcFS: filepath.Join(root, "proc")}
	c, err := build(env, gpus.Options{
		Backend: "fake", FakeFile: filepath.Join("..", "..", "testdata", "gpu", "demo.json"),
		MappingDir: filepath.Join("..", "..", "testdata", "gpu", "demo-mapping")})
	if err != nil {
		t.Fatal(err)
	}
	exp := collector.NewExporter(map[string]collector.Collector{"gpu": c}, collector.Options{Discoverer: disc, Problems: collector.NewProblems(nil)})
	g := collectortest.Gatherer(exp)
	out := string(testutil.Exposition(t, g))
	for _, want := range []string{
		`slurm_job_gpu_utilization_ratio{account="physics",gpu="0",jobid="100"`, // busy, found by its process
		`slurm_job_gpu_info{account="chemistry",gpu="1",jobid="101",method="mapping_dir"`,
		`slurm_job_gpu_utilization_ratio{account="chemistry",gpu="1",jobid="101"`, // allocated, idle
		`jobscope_gpu_power_watts{gpu="2"`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("demo output lacks %s", want)
		}
	}
	lint(t, g)
}

// No driver or library: the collector exists, says "no data" (success 0,
// one log line in all), and the other collectors stay whole.
func TestGPUNoDriver(t *testing.T) {
	noDev := func(gpu.Config) (gpu.Backend, error) {
		return nil, fmt.Errorf("%w: nvml init: ERROR_LIBRARY_NOT_FOUND", gpu.ErrNoDevice)
	}
	c, err := build(&collector.Env{}, gpus.Options{Backend: "auto", Open: noDev})
	if err != nil {
		t.Fatal(err)
	}
	problems := collector.NewProblems(nil)
	other := gpuOtherCollector(func(s *collector.Scrape, ch chan<- prometheus.Metric) error { return nil })
	exp := collector.NewExporter(map[string]collector.Collector{"gpu": c, "other": other}, collector.Options{Problems: problems})
	g := collectortest.Gatherer(exp)
	for i := 0; i < 2; i++ {
		out := string(testutil.Exposition(t, g))
		for _, want := range []string{`jobscope_scrape_collector_success{collector="gpu"} 0`, `jobscope_scrape_collector_success{collector="other"} 1`} {
			if !strings.Contains(out, want) {
				t.Errorf("scrape %d lacks %s", i, want)
			}
		}
		if strings.Contains(out, "gpu_info") {
			t.Error("GPU series without a backend")
		}
	}
	if problems.Count("gpu", "no_data") != 2 {
		t.Errorf("no_data counted %v", problems.Count("gpu", "no_data"))
	}

	// The real thing on this machine: no driver, or no cgo.
	c, err = build(&collector.Env{}, gpus.Options{Backend: "auto"})
	if err != nil {
		t.Fatal(err)
	}
	if gc := c.(*gpuCollector); gc.source != nil {
		gc.source.Close()
		t.Skip("an NVIDIA driver is installed here")
	}
	err = c.Collect(collectortest.Scrape(context.Background(), "gpu", nil, nil), make(chan prometheus.Metric, 10))
	if !errors.Is(err, collector.ErrNoData) {
		t.Errorf("err %v, want ErrNoData", err)
	}
}

func TestGPUConfigErrors(t *testing.T) {
	for _, o := range []gpus.Options{{Backend: "cuda"}, {Backend: "fake"}, {Backend: "fake", FakeFile: "/nonexistent.json"}} {
		if _, err := build(&collector.Env{}, o); err == nil {
			t.Errorf("%+v: no error", o)
		}
	}
	if c, err := build(&collector.Env{}, gpus.Options{Backend: "none"}); err != nil || c.(*gpuCollector).source != nil {
		t.Errorf("none: %v", err)
	}
}

func TestGPUSnapshotFails(t *testing.T) {
	dcgm, open := fakeDCGM(t)
	dcgm.SetError(errors.New("host engine connection lost"))
	exp, problems := gpuFixture(t, "node-v2", open)
	out := string(testutil.Exposition(t, collectortest.Gatherer(exp)))
	if !strings.Contains(out, `jobscope_scrape_collector_success{collector="gpu"} 0`) || problems.Count("gpu", "collect_failed") != 1 {
		t.Errorf("a failed snapshot must fail the scrape:\n%s", out)
	}
}

// Xid events count against the job holding the GPU when they are seen;
// the job's counts go when it ends, the node's stay.
func TestGPUXidAttribution(t *testing.T) {
	dcgm, open := fakeDCGM(t)
	exp, _ := gpuFixture(t, "node-v2", open)
	g := collectortest.Gatherer(exp)
	testutil.Exposition(t, g) // takes the three fixture events
	dcgm.AddXid(gpu.XidEvent{UUID: "GPU-00000000-0000-4000-8000-000000000000", GPUInstanceID: -1, Xid: 79},
		gpu.XidEvent{UUID: "GPU-00000000-0000-4000-8000-000000000006", GPUInstanceID: -1, Xid: 13},
		gpu.XidEvent{UUID: "GPU-gone", GPUInstanceID: -1, Xid: 13})
	out := string(testutil.Exposition(t, g))
	for _, want := range []string{
		`slurm_job_gpu_xid_errors_total{account="physics",gpu="0",jobid="300",mig_uuid="",model="NVIDIA A100-SXM4-40GB",user="alice",uuid="GPU-00000000-0000-4000-8000-000000000000",xid="79"} 2`,
		`jobscope_gpu_xid_errors_total{gpu="6",mig_uuid="",model="NVIDIA A100-SXM4-40GB",uuid="GPU-00000000-0000-4000-8000-000000000006",xid="13"} 2`,
		`slurm_job_gpu_xid_errors_total{account="biology",gpu="7",jobid="302",mig_uuid="MIG-00000000-0000-4000-8000-000000000700",model="NVIDIA A100-SXM4-40GB MIG 3g.20gb",user="carol",uuid="GPU-00000000-0000-4000-8000-000000000007",xid="94"} 1`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("lacks %s", want)
		}
	}

	// Scrapes with no jobs at all: the jobs' counts are not emitted, and
	// they are dropped with the jobs' state; the node's stay.
	c := gpuCollectorOf(t, exp)
	for i := range collector.StateGrace {
		ch := make(chan prometheus.Metric, 1000)
		s := collector.NewScrape(context.Background(), "gpu", collector.ScrapeOptions{Serial: uint64(3 + i)})
		if err := c.Collect(s, ch); err != nil {
			t.Fatal(err)
		}
		close(ch)
		for m := range ch {
			if strings.Contains(m.Desc().String(), "slurm_job_gpu_xid") {
				t.Fatal("an ended job's Xid count is emitted")
			}
		}
	}
	if c.xidJob.Len() != 0 || len(c.xidNode) != 1 {
		t.Errorf("after the jobs ended: %d jobs' counts, %d node counts", c.xidJob.Len(), len(c.xidNode))
	}
}

func gpuCollectorOf(t *testing.T, exp *collector.Exporter) *gpuCollector {
	t.Helper()
	return exp.Collector("gpu").(*gpuCollector)
}

// Every emitted family is described for docs/metrics.md.
func TestGPUDescsCoverOutput(t *testing.T) {
	_, open := fakeDCGM(t)
	exp, _ := gpuFixture(t, "node-v2", open)
	described := map[string]bool{}
	for _, d := range Factory().Descs() {
		described[d.Name] = true
	}
	mfs, err := collectortest.Gatherer(exp).Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		n := mf.GetName()
		if (strings.HasPrefix(n, "slurm_job_gpu_") || strings.HasPrefix(n, "jobscope_gpu_")) && !described[n] {
			t.Errorf("%s is emitted but not described", n)
		}
	}
}

type gpuOtherCollector func(s *collector.Scrape, ch chan<- prometheus.Metric) error

func (f gpuOtherCollector) Collect(s *collector.Scrape, ch chan<- prometheus.Metric) error {
	return f(s, ch)
}
