// SPDX-License-Identifier: Apache-2.0

package process

import (
	"context"
	"errors"
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	promtest "github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/spf13/pflag"

	"github.com/jobscope/jobscope/collector"
	"github.com/jobscope/jobscope/collector/collectortest"
	"github.com/jobscope/jobscope/collector/provide"
	"github.com/jobscope/jobscope/collector/provide/ebpfprogs"
	"github.com/jobscope/jobscope/discovery"
	"github.com/jobscope/jobscope/internal/testutil"
)

var rewriteProcFixture = flag.Bool("process.fixture", false, "rewrite testdata/process from the fixture spec in process_fixture_test.go")

// procAdapter runs a jobscope collector as a prometheus.Collector over a
// fixed job list.
type procAdapter struct {
	c        collector.Collector
	jobs     func() []*discovery.Job
	problems *collector.Problems
	err      error
}

func (a *procAdapter) Describe(chan<- *prometheus.Desc) {}

func (a *procAdapter) Collect(ch chan<- prometheus.Metric) {
	a.err = a.c.Collect(collectortest.Scrape(context.Background(), "process", a.jobs(), a.problems), ch)
}

func procFixtureJobs(t testing.TB, root string) func() []*discovery.Job {
	t.Helper()
	d := discovery.New(discovery.Config{
		Layout:     discovery.Layout{V2: filepath.Join(root, "cgroup")},
		ProcFS:     filepath.Join(root, "proc"),
		PropsDir:   filepath.Join(root, "props"),
		LookupUser: func(int) (string, error) { return "", errors.New("no users in fixtures") },
	})
	return func() []*discovery.Job {
		return d.Discover(context.Background(), func(cause string, err error) { t.Errorf("discovery: %s: %v", cause, err) })
	}
}

func newFixtureProcCollector(t testing.TB, procRoot string, o Options) *processCollector {
	t.Helper()
	c, err := New(&collector.Env{ProcFS: procRoot}, o)
	if err != nil {
		t.Fatal(err)
	}
	return c.(*processCollector)
}

func TestProcessGolden(t *testing.T) {
	root := filepath.Join("..", "..", "testdata", "process")
	if *rewriteProcFixture {
		if err := os.RemoveAll(root); err != nil {
			t.Fatal(err)
		}
		writeProcGoldenFixture(t, root)
	}
	for _, tc := range []struct {
		name string
		opts Options
	}{
		{"metrics-full.golden", Options{Mounts: []string{"/scratch", "/home/"}, TopN: 2, Threads: true, IO: IOOn, Level: collector.LevelFull}},
		{"metrics-defaults.golden", Options{TopN: 5, Threads: false, IO: IOAuto}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			problems := collector.NewProblems(nil)
			a := &procAdapter{c: newFixtureProcCollector(t, filepath.Join(root, "proc"), tc.opts), jobs: procFixtureJobs(t, root), problems: problems}
			reg := prometheus.NewPedanticRegistry()
			reg.MustRegister(a)
			testutil.Golden(t, filepath.Join(root, tc.name), testutil.Exposition(t, reg))
			if a.err != nil {
				t.Fatal(a.err)
			}
			lint, err := promtest.CollectAndLint(a)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range lint {
				t.Errorf("lint: %s: %s", p.Metric, p.Text)
			}
			// The exited pid, the kernel thread and the zombie's missing
			// exe are normal: nothing to report.
			for _, cause := range []string{"permission_denied", "bad_procfs_file", "pids_not_visible"} {
				if n := problems.Count("process", cause); n != 0 {
					t.Errorf("problem %s reported %v times", cause, n)
				}
			}
		})
	}
}

// procValues collects once and returns values by "name{extra label values}"
// for job jobid.
func procValues(t testing.TB, c collector.Collector, jobs func() []*discovery.Job, jobid string) map[string]float64 {
	t.Helper()
	return procValuesWith(t, c, jobs, jobid, collector.NewProblems(nil))
}

// procValuesWith is procValues reporting problems to p.
func procValuesWith(t testing.TB, c collector.Collector, jobs func() []*discovery.Job, jobid string, p *collector.Problems) map[string]float64 {
	t.Helper()
	ch := make(chan prometheus.Metric, 1024)
	if err := c.Collect(collectortest.Scrape(context.Background(), "process", jobs(), p), ch); err != nil {
		t.Fatal(err)
	}
	close(ch)
	names := map[*prometheus.Desc]string{}
	for _, d := range collector.DescsOf(c.(*processCollector).d) {
		names[d.Prom()] = d.Name
	}
	out := map[string]float64{}
	for m := range ch {
		var pb dto.Metric
		if err := m.Write(&pb); err != nil {
			t.Fatal(err)
		}
		var extra []string
		match := false
		for _, lp := range pb.Label {
			switch lp.GetName() {
			case "jobid":
				match = lp.GetValue() == jobid
			case "user", "account":
			default:
				extra = append(extra, lp.GetName()+"="+lp.GetValue())
			}
		}
		if !match {
			continue
		}
		sort.Strings(extra)
		key := names[m.Desc()] + "{" + strings.Join(extra, ",") + "}"
		switch {
		case pb.Gauge != nil:
			out[key] = pb.Gauge.GetValue()
		case pb.Counter != nil:
			out[key] = pb.Counter.GetValue()
		}
	}
	return out
}

// In auto mode the /proc/<pid>/io fallback is on unless cmd loaded the
// eBPF programs (Env.BPF), which count IO themselves.
func TestProcessIOFollowsEBPF(t *testing.T) {
	root := filepath.Join("..", "..", "testdata", "process")
	env := &collector.Env{ProcFS: filepath.Join(root, "proc")}
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	build := Factory().Flags(fs)
	if err := fs.Parse([]string{"--collector.process.threads", "--collector.process.top-n=1"}); err != nil {
		t.Fatal(err)
	}
	jobs := procFixtureJobs(t, root)
	const ioKey = "slurm_job_process_storage_io_bytes_total{direction=read}"
	c, err := build(env)
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := procValues(t, c, jobs, "100")[ioKey]; !ok || v == 0 {
		t.Fatalf("IO fallback off without ebpf: %v %v", v, ok)
	}
	env.Providers = provide.NewSet()
	env.Providers.Put(ebpfprogs.New()) // said loaded: no kernel needed
	if c, err = build(env); err != nil {
		t.Fatal(err)
	}
	if _, ok := procValues(t, c, jobs, "100")[ioKey]; ok {
		t.Fatal("IO fallback still on while ebpf is loaded")
	}
	if _, err := New(env, Options{IO: "sometimes"}); err == nil {
		t.Fatal("bad --collector.process.io accepted")
	}
	if _, err := New(env, Options{Mounts: []string{"scratch"}}); err == nil {
		t.Fatal("relative mount accepted")
	}
}

func TestProcessClassify(t *testing.T) {
	root := filepath.Join("..", "..", "testdata", "process", "proc")
	r := procReader{root: root}
	var ri procReadIssues
	r.classify(&ri, 1002, &fs.PathError{Op: "open", Path: "x", Err: syscall.ESRCH})
	r.classify(&ri, 1002, &fs.PathError{Op: "open", Path: "x", Err: syscall.ENOENT})
	// A half-read file of a process that is gone by now is silent too.
	r.classify(&ri, 99999, errors.New("unexpected EOF"))
	if len(ri.errs) != 0 {
		t.Fatalf("vanished processes reported: %v", ri.errs)
	}
	r.classify(&ri, 1002, &fs.PathError{Op: "open", Path: "x", Err: syscall.EACCES})
	r.classify(&ri, 1002, &fs.PathError{Op: "open", Path: "y", Err: syscall.EPERM})
	r.classify(&ri, 1002, errors.New("unexpected EOF"))
	if len(ri.errs) != 2 || ri.errs["permission_denied"] == nil || ri.errs["bad_procfs_file"] == nil {
		t.Fatalf("causes: %v", ri.errs)
	}
}

// TestProcessHiddenPIDs: with hidepid, every listed pid is missing; that is
// one problem per scrape, not silence and not a line per pid.
func TestProcessHiddenPIDs(t *testing.T) {
	root := filepath.Join("..", "..", "testdata", "process")
	problems := collector.NewProblems(nil)
	c := newFixtureProcCollector(t, t.TempDir(), Options{Threads: true, TopN: 1})
	ch := make(chan prometheus.Metric, 1024)
	if err := c.Collect(collectortest.Scrape(context.Background(), "process", procFixtureJobs(t, root)(), problems), ch); err != nil {
		t.Fatal(err)
	}
	if n := problems.Count("process", "pids_not_visible"); n != 1 {
		t.Fatalf("pids_not_visible reported %v times", n)
	}
}

func TestProcessUnderMount(t *testing.T) {
	for _, tc := range []struct {
		target, mount string
		want          bool
	}{
		{"/scratch/a", "/scratch", true},
		{"/scratch", "/scratch", true},
		{"/scratchy/a", "/scratch", false},
		{"socket:[1]", "/scratch", false},
		{"/x", "/", true},
		{"/home/a/b (deleted)", "/home", true},
	} {
		if got := procUnderMount(tc.target, tc.mount); got != tc.want {
			t.Errorf("procUnderMount(%q, %q) = %v", tc.target, tc.mount, got)
		}
	}
}

// TestProcessJobLifecycle: a job missing from a scrape or two keeps its
// accounting (a discovery hiccup must not reset counters); after three
// scrapes without it, it is dropped. A passed deadline stops the scrape.
func TestProcessJobLifecycle(t *testing.T) {
	root := filepath.Join("..", "..", "testdata", "process")
	c := newFixtureProcCollector(t, filepath.Join(root, "proc"), Options{TopN: 1})
	all := procFixtureJobs(t, root)()
	only100 := func() []*discovery.Job { return all[:1] }
	collect := func(jobs func() []*discovery.Job) {
		ch := make(chan prometheus.Metric, 1024)
		if err := c.Collect(collectortest.Scrape(context.Background(), "process", jobs(), collector.NewProblems(nil)), ch); err != nil {
			t.Fatal(err)
		}
	}
	collect(func() []*discovery.Job { return all })
	if c.jobs.Len() != 3 {
		t.Fatalf("%d jobs tracked", c.jobs.Len())
	}
	collect(only100)
	collect(only100)
	if c.jobs.Len() != 3 {
		t.Fatalf("jobs dropped after two missed scrapes: %d left", c.jobs.Len())
	}
	collect(only100)
	if c.jobs.Len() != 1 {
		t.Fatalf("%d jobs tracked after three missed scrapes", c.jobs.Len())
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	ch := make(chan prometheus.Metric, 1024)
	if err := c.Collect(collectortest.Scrape(ctx, "process", all, collector.NewProblems(nil)), ch); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled scrape: %v", err)
	}
	if c.jobs.Len() != 1 {
		t.Fatalf("a cancelled scrape aged jobs: %d tracked", c.jobs.Len())
	}
}

// FuzzProcessReadProc feeds arbitrary stat, status and io files (seeded
// from the formats of a 6.x kernel) to the reader: it must never panic,
// and a file it cannot parse is one problem cause, not a crash.
func FuzzProcessReadProc(f *testing.F) {
	f.Add([]byte(procStatLine(42, 1, "a) (b", "R", 0, 10, 5, 1, 99)), []byte(procStatusText("a", "R", 42, 42, 1, 3, 4)), []byte(procIOText(1, 2, 3, 4)))
	f.Add([]byte("42 (x) Z 1 0 0 0 -1 0"), []byte("voluntary_ctxt_switches:\tx\n"), []byte("rchar: 1\n"))
	f.Add([]byte(""), []byte(""), []byte(""))
	f.Fuzz(func(t *testing.T, stat, status, io []byte) {
		root := t.TempDir()
		dir := filepath.Join(root, "42")
		for _, d := range []string{filepath.Join(dir, "fd"), filepath.Join(dir, "task", "42")} {
			if err := os.MkdirAll(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		for name, b := range map[string][]byte{"stat": stat, "status": status, "io": io} {
			for _, d := range []string{dir, filepath.Join(dir, "task", "42")} {
				if err := os.WriteFile(filepath.Join(d, name), b, 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}
		c := newFixtureProcCollector(t, root, Options{Threads: true, IO: IOOn, TopN: 2, Mounts: []string{"/scratch"}})
		var js procJobSample
		var ri procReadIssues
		c.reader.readJob([]int{42}, &js, true, &ri)
		a := newProcJobAcct()
		a.update(&js, 1, 2)
		a.cpuSeries(nil)
		a.ioTotals()
		a.taskTotals()
		for cause := range ri.errs {
			if cause != "bad_procfs_file" {
				t.Fatalf("unexpected cause %q", cause)
			}
		}
	})
}

func TestProcessFlags(t *testing.T) {
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	build := Factory().Flags(fs)
	// Mount points must exist: two directories stand for /scratch and /home.
	scratch, home := t.TempDir(), t.TempDir()
	if err := fs.Parse([]string{"--collector.process.fs=" + scratch + "," + home + "/", "--collector.process.top-n=3", "--collector.process.io=off"}); err != nil {
		t.Fatal(err)
	}
	c, err := build(&collector.Env{ProcFS: filepath.Join("..", "..", "testdata", "process", "proc")})
	if err != nil {
		t.Fatal(err)
	}
	pc := c.(*processCollector)
	if got := strings.Join(pc.reader.mounts, ","); got != scratch+","+home || pc.opts.TopN != 3 || pc.ioOn() || pc.opts.Threads {
		t.Fatalf("options: mounts %s, %+v", got, pc.opts)
	}
}

// TestProcessConcurrentScrapes: scrapes may overlap (two Prometheus
// servers); the accounting is updated by one at a time (run with -race).
func TestProcessConcurrentScrapes(t *testing.T) {
	root := filepath.Join("..", "..", "testdata", "process")
	c := newFixtureProcCollector(t, filepath.Join(root, "proc"), Options{TopN: 2, Threads: true, IO: IOOn})
	jobs := procFixtureJobs(t, root)()
	done := make(chan error)
	for g := 0; g < 4; g++ {
		go func() {
			var err error
			for i := 0; i < 5 && err == nil; i++ {
				ch := make(chan prometheus.Metric, 1024)
				err = c.Collect(collectortest.Scrape(context.Background(), "process", jobs, collector.NewProblems(nil)), ch)
			}
			done <- err
		}()
	}
	for g := 0; g < 4; g++ {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}

// The same mount given twice ("/scratch", "/scratch/") is one series.
func TestProcessMountsDeduplicated(t *testing.T) {
	c, err := New(&collector.Env{ProcFS: t.TempDir()}, Options{TopN: 5, Mounts: []string{"/scratch", "/scratch/", "/home"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := c.(*processCollector).reader.mounts; len(got) != 2 {
		t.Errorf("mounts %v, want /scratch and /home once each", got)
	}
}
