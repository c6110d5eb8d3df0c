// SPDX-License-Identifier: Apache-2.0

package power

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	promtest "github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"

	"github.com/jobscope/jobscope/collector"
	"github.com/jobscope/jobscope/collector/collectortest"
	"github.com/jobscope/jobscope/collector/provide"
	"github.com/jobscope/jobscope/collector/provide/gpus"
	"github.com/jobscope/jobscope/discovery"
	"github.com/jobscope/jobscope/gpu"
	"github.com/jobscope/jobscope/internal/testutil"
	"github.com/jobscope/jobscope/power"
)

// powerScrape adapts one collector to prometheus.Collector for a registry.
type powerScrape struct {
	c        collector.Collector
	jobs     []*discovery.Job
	problems *collector.Problems
	gpus     GPUReader
	err      *error
}

func (p powerScrape) Describe(chan<- *prometheus.Desc) {}

func (p powerScrape) Collect(ch chan<- prometheus.Metric) {
	err := p.c.Collect(scrape(p.c, p.jobs, p.problems, p.gpus), ch)
	if p.err != nil {
		*p.err = err
	}
}

// scrape builds a scrape of jobs in which c reads gpus (nil: no GPU).
func scrape(c collector.Collector, jobs []*discovery.Job, problems *collector.Problems, gpus GPUReader) *collector.Scrape {
	c.(*powerCollector).opts.GPU = gpus
	return collectortest.ScrapeWith(context.Background(), "power", collector.ScrapeOptions{Jobs: jobs, Problems: problems})
}

// fakeGPUs reads two GPUs: g0 held by job 104, g1 idle; each reading adds
// 300 J and 50 J.
type fakeGPUs struct{ n atomic.Int32 }

func (f *fakeGPUs) Read(provide.Scrape) (*gpus.Reading, error) {
	k := float64(f.n.Add(1) - 1)
	return &gpus.Reading{
		Snapshot: &gpu.Snapshot{Devices: []gpu.Device{
			{UUID: "GPU-0000", Values: map[gpu.Field]float64{gpu.EnergyJoules: 1000 + 300*k}},
			{UUID: "GPU-0001", Values: map[gpu.Field]float64{gpu.EnergyJoules: 10 + 50*k}},
		}},
		Assign: map[string]gpu.Assignment{"GPU-0000": {JobID: "104", Method: gpu.MethodMappingDir}},
	}, nil
}

func powerJobs(root string) []*discovery.Job {
	v2 := filepath.Join(root, "cgroup", "system.slice", "slurmstepd.scope")
	v1 := filepath.Join(root, "cgroup", "v1")
	return []*discovery.Job{
		{ID: "101", Version: 2, Dir: filepath.Join(v2, "job_101"), Meta: discovery.Meta{User: "alice", Account: "physics"}},
		{ID: "102", Version: 2, Dir: filepath.Join(v2, "job_102"), Meta: discovery.Meta{User: "bob", Account: "chem"}},
		{ID: "103", Version: 1, V1: map[string]string{
			"cpuacct": filepath.Join(v1, "cpuacct", "slurm", "uid_1000", "job_103"),
			"memory":  filepath.Join(v1, "memory", "slurm", "uid_1000", "job_103"),
		}, Meta: discovery.Meta{User: "alice", Account: "physics"}},
		{ID: "104", Version: 2, Dir: filepath.Join(v2, "job_104"), Meta: discovery.Meta{User: "carol", Account: "ml"}},
	}
}

// powerFixture builds the collector over a copy of testdata/power/node
// scrape1, with IPMI answered by `cat` of a saved ipmi-dcmi output (run
// like the real tool: exec, no shell), and a fake GPU source for the
// scrapes.
func powerFixture(t *testing.T, o Options) (collector.Collector, string, *time.Time, GPUReader) {
	t.Helper()
	root := t.TempDir()
	testutil.CopyTree(t, "../../testdata/power/node/scrape1", root)
	good, _ := filepath.Abs("../../testdata/power/ipmi/good.txt")
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	env := &collector.Env{SysFS: filepath.Join(root, "sys"), ProcFS: filepath.Join(root, "proc")}
	o.RAPL, o.PerJob = true, true
	o.IPMICommand = "cat " + good
	o.IPMIInterval, o.IPMITimeout = 30*time.Second, 30*time.Second
	if o.IdlePolicy == "" {
		o.IdlePolicy = "capacity"
	}
	o.Refresh, o.Timeout = 15*time.Minute, 10*time.Second
	o.Now = func() time.Time { return now }
	c, err := New(env, o)
	if err != nil {
		t.Fatal(err)
	}
	return c, root, &now, &fakeGPUs{}
}

// TestPowerGolden: scrape 1 sets the baselines; 10 s later scrape 2 has
// 1000 J of package energy, 160 J of DRAM, 220 W from the BMC and 350 J
// of GPUs; jobs used 32, 16, 16 and 0 CPU-s of the node's 80 (see
// testdata/power/README.md for the arithmetic).
func TestPowerGolden(t *testing.T) {
	for _, policy := range []string{"capacity", "jobs"} {
		t.Run(policy, func(t *testing.T) {
			c, root, now, gpus := powerFixture(t, Options{IdlePolicy: policy, Factor: 56, Country: "DE"})
			jobs := powerJobs(root)
			problems := collector.NewProblems(nil)
			var err error
			reg := prometheus.NewPedanticRegistry()
			reg.MustRegister(powerScrape{c: c, jobs: jobs, problems: problems, gpus: gpus, err: &err})
			if _, gerr := reg.Gather(); gerr != nil || err != nil {
				t.Fatalf("scrape 1: %v %v", gerr, err)
			}
			testutil.CopyTree(t, "../../testdata/power/node/scrape2", root)
			*now = now.Add(10 * time.Second)
			got := testutil.Exposition(t, reg)
			if err != nil {
				t.Fatalf("scrape 2: %v", err)
			}
			testutil.Golden(t, filepath.Join("..", "..", "testdata", "power", "metrics-"+policy+".golden"), got)
			lint, lerr := promtest.GatherAndLint(reg)
			if lerr != nil {
				t.Fatal(lerr)
			}
			for _, p := range lint {
				t.Errorf("lint: %s: %s", p.Metric, p.Text)
			}
			for _, cause := range []string{"ipmi_command", "rapl_read", "rapl_permission", "job_usage", "gpu_energy"} {
				if n := problems.Count("power", cause); n != 0 {
					t.Errorf("problem %s reported %v times", cause, n)
				}
			}
		})
	}
}

// TestPowerSumNeverExceedsNode checks the golden scenario's invariant on
// the collector's own output: per source, jobs got no more than the node
// measured.
func TestPowerSumNeverExceedsNode(t *testing.T) {
	for _, policy := range []string{"capacity", "jobs"} {
		c, root, now, gpus := powerFixture(t, Options{IdlePolicy: policy})
		jobs := powerJobs(root)
		collectAll(t, c, jobs, gpus)
		testutil.CopyTree(t, "../../testdata/power/node/scrape2", root)
		*now = now.Add(10 * time.Second)
		sums, rest := map[string]float64{}, map[string]float64{}
		for _, m := range collectAll(t, c, jobs, gpus) {
			if isMetric(m.desc, "slurm_job_energy_joules_total") {
				sums[m.labels["source"]] += m.value
			}
			if isMetric(m.desc, "jobscope_energy_unattributed_joules_total") {
				rest[m.labels["source"]] = m.value
			}
		}
		limits := map[string]float64{"rapl_cpu": 1000, "rapl_dram": 160, "gpu": 350, "ipmi": 2200 - 350}
		for src, lim := range limits {
			if sums[src] > lim || sums[src] <= 0 {
				t.Errorf("%s: jobs got %v J of %v", policy+"/"+src, sums[src], lim)
			}
			if d := sums[src] + rest[src] - lim; d > 1e-9 || d < -1e-9 {
				t.Errorf("%s: jobs %v + unattributed %v != node %v", policy+"/"+src, sums[src], rest[src], lim)
			}
		}
		if policy == "jobs" && (sums["rapl_cpu"] != 1000 || sums["rapl_dram"] != 160) {
			t.Errorf("jobs policy must hand out all energy: %v", sums)
		}
	}
}

type flatMetric struct {
	desc   string
	labels map[string]string
	value  float64
}

func collectAll(t *testing.T, c collector.Collector, jobs []*discovery.Job, gpus GPUReader) []flatMetric {
	t.Helper()
	ch := make(chan prometheus.Metric, 1024)
	if err := c.Collect(scrape(c, jobs, collector.NewProblems(nil), gpus), ch); err != nil {
		t.Fatal(err)
	}
	close(ch)
	var out []flatMetric
	for m := range ch {
		pb := &dto.Metric{}
		if err := m.Write(pb); err != nil {
			t.Fatal(err)
		}
		f := flatMetric{desc: m.Desc().String(), labels: map[string]string{}}
		for _, l := range pb.Label {
			f.labels[l.GetName()] = l.GetValue()
		}
		switch {
		case pb.Counter != nil:
			f.value = pb.Counter.GetValue()
		case pb.Gauge != nil:
			f.value = pb.Gauge.GetValue()
		}
		out = append(out, f)
	}
	return out
}

// TestPowerNoHardware: no powercap tree, no IPMI, no GPU: ErrNoData, and
// the emission factor is still there.
func TestPowerNoHardware(t *testing.T) {
	env := &collector.Env{SysFS: t.TempDir(), ProcFS: t.TempDir()}
	c, err := New(env, Options{RAPL: true, PerJob: true, IdlePolicy: "capacity", Factor: 100})
	if err != nil {
		t.Fatal(err)
	}
	ch := make(chan prometheus.Metric, 16)
	err = c.Collect(collectortest.Scrape(context.Background(), "power", nil, collector.NewProblems(nil)), ch)
	close(ch)
	if !errors.Is(err, collector.ErrNoData) {
		t.Fatalf("want ErrNoData, got %v", err)
	}
	if n := len(ch); n != 1 {
		t.Fatalf("%d metrics, want the static factor only", n)
	}
}

func TestPowerBadOptions(t *testing.T) {
	env := &collector.Env{SysFS: t.TempDir(), ProcFS: t.TempDir()}
	for name, o := range map[string]Options{
		"policy":   {IdlePolicy: "free"},
		"country":  {IdlePolicy: "capacity", Country: "XX"},
		"provider": {IdlePolicy: "capacity", Provider: "wattsup"},
		"factor":   {IdlePolicy: "capacity", Factor: -1},
		"token":    {IdlePolicy: "capacity", Provider: "electricitymaps", Zone: "DE"},
	} {
		t.Setenv(power.ElectricityMapsTokenEnv, "")
		if _, err := New(env, o); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// TestPowerIPMIGarbage: a BMC tool printing garbage gives a counted
// problem and no IPMI series; RAPL and the other series are unaffected.
func TestPowerIPMIGarbage(t *testing.T) {
	c, root, _, gpus := powerFixture(t, Options{})
	bad, _ := filepath.Abs("../../testdata/power/ipmi/garbage.txt")
	pc := c.(*powerCollector)
	opts := pc.opts
	opts.IPMICommand = "cat " + bad
	c, err := New(pc.env, opts)
	if err != nil {
		t.Fatal(err)
	}
	problems := collector.NewProblems(nil)
	ms, err := powerCollectOnce(c, root, problems, gpus)
	if err != nil {
		t.Fatal(err)
	}
	rapl := 0
	for _, m := range ms {
		s := m.Desc().String()
		if strings.Contains(s, `fqName: "jobscope_ipmi_`) {
			t.Errorf("IPMI series from garbage: %s", s)
		}
		if isMetric(s, "jobscope_rapl_package_joules_total") {
			rapl++
		}
	}
	if rapl != 2 || problems.Count("power", "ipmi_command") != 1 {
		t.Fatalf("rapl series %d, ipmi problems %v", rapl, problems.Count("power", "ipmi_command"))
	}
}

// TestPowerLiveFactor: the rte provider (a local httptest server) is
// exported under its own source and wins over the static factor for grams.
func TestPowerLiveFactor(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Write([]byte(`{"total_count": 1, "results": [{"date_heure": "2026-11-21T11:45:00+00:00", "taux_co2": 18}]}`))
	}))
	defer srv.Close()
	c, root, now, gpus := powerFixture(t, Options{Factor: 400, Provider: "rte", ProviderURL: srv.URL, HTTPClient: srv.Client()})
	jobs := powerJobs(root)
	collectAll(t, c, jobs, gpus)
	testutil.CopyTree(t, "../../testdata/power/node/scrape2", root)
	*now = now.Add(10 * time.Second)
	factors := map[string]float64{}
	var grams101 float64
	for _, m := range collectAll(t, c, jobs, gpus) {
		if isMetric(m.desc, "jobscope_emissions_factor_grams_per_kwh") {
			factors[m.labels["source"]] = m.value
		}
		if isMetric(m.desc, "slurm_job_emissions_grams_total") && m.labels["jobid"] == "101" {
			grams101 = m.value
		}
	}
	if factors["rte"] != 18 || factors["static"] != 400 {
		t.Fatalf("factors %v", factors)
	}
	if want := 740.0 / 3.6e6 * 18; grams101 != want {
		t.Fatalf("job 101: %v g, want %v (ipmi 740 J at 18 g/kWh)", grams101, want)
	}
	if hits.Load() != 1 {
		t.Fatalf("%d requests in two scrapes within the refresh interval, want 1", hits.Load())
	}
}

// TestPowerRAPLRefused: energy_uj unreadable (root-only on Linux >= 5.10
// when not root) and nothing else: one explained problem, ErrNoData, and
// the jobs keep their (zero) counters. Root reads any mode, so the file is
// replaced by a directory, which fails for root too.
func TestPowerRAPLRefused(t *testing.T) {
	c, root, _, _ := powerFixture(t, Options{})
	pc := c.(*powerCollector)
	opts := pc.opts
	opts.IPMICommand = ""
	var gpus GPUReader // no GPU
	for _, z := range []string{"intel-rapl:0", "intel-rapl:0:0", "intel-rapl:0:1", "intel-rapl:1", "intel-rapl:1:0"} {
		f := filepath.Join(root, "sys", "class", "powercap", z, "energy_uj")
		if err := os.Remove(f); err != nil {
			t.Fatal(err)
		}
		if err := os.Mkdir(f, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	c, err := New(pc.env, opts)
	if err != nil {
		t.Fatal(err)
	}
	problems := collector.NewProblems(nil)
	ms, err := powerCollectOnce(c, root, problems, gpus)
	if !errors.Is(err, collector.ErrNoData) || problems.Count("power", "rapl_read") != 1 {
		t.Fatalf("err %v, rapl_read problems %v", err, problems.Count("power", "rapl_read"))
	}
	jobs := 0
	for _, m := range ms {
		if isMetric(m.Desc().String(), "slurm_job_energy_joules_total") {
			jobs++
		}
	}
	if jobs != 8 { // 4 jobs x (rapl_cpu, rapl_dram)
		t.Fatalf("%d per-job series, want 8", jobs)
	}
}

// powerCollectOnce runs one Collect of c over the fixture jobs under root
// and returns what it emitted.
func powerCollectOnce(c collector.Collector, root string, problems *collector.Problems, gpus GPUReader) ([]prometheus.Metric, error) {
	ch := make(chan prometheus.Metric, 256)
	err := c.Collect(scrape(c, powerJobs(root), problems, gpus), ch)
	close(ch)
	var ms []prometheus.Metric
	for m := range ch {
		ms = append(ms, m)
	}
	return ms, err
}

// isMetric says whether a Desc's string is that of metric name (HELP texts
// mention other metrics, so a plain substring test is not enough).
func isMetric(desc, name string) bool { return strings.Contains(desc, `fqName: "`+name+`"`) }
