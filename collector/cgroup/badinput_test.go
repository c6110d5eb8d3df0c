// SPDX-License-Identifier: Apache-2.0

package cgroup

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	promtest "github.com/prometheus/client_golang/prometheus/testutil"
	"golang.org/x/sys/unix"

	"github.com/jobscope/jobscope/collector"
	"github.com/jobscope/jobscope/collector/collectortest"
	"github.com/jobscope/jobscope/discovery"
	"github.com/jobscope/jobscope/internal/testutil"
)

// badNode copies the v2 fixture node into a temp dir that a test may break.
func badNode(t *testing.T) string {
	t.Helper()
	dst := t.TempDir()
	if out, err := exec.Command("cp", "-a", filepath.Join("..", "..", "testdata", "node-v2")+"/.", dst).CombinedOutput(); err != nil {
		t.Fatalf("copy fixture: %v %s", err, out)
	}
	return dst
}

type badRun struct {
	exp      *collector.Exporter
	problems *collector.Problems
	logs     *bytes.Buffer
	c        collector.Collector
	disc     *discovery.Discoverer
}

func newBadRun(t *testing.T, root string) *badRun {
	t.Helper()
	logs := &bytes.Buffer{}
	log := slog.New(slog.NewTextHandler(logs, nil))
	disc := discovery.New(discovery.Config{
		Layout: discovery.Layout{V2: filepath.Join(root, "cgroup")}, ProcFS: filepath.Join(root, "proc"),
		PropsDir: filepath.Join(root, "props"), LookupUser: collectortest.LookupUser,
		ProcOwner: collectortest.FixtureOwner,
	})
	problems := collector.NewProblems(log)
	// Full level: every file the collector can read is read, so every bad
	// file is met.
	c := New(Options{SysFS: filepath.Join(root, "sys"), Level: collector.LevelFull})
	return &badRun{collector.NewExporter(map[string]collector.Collector{"cgroup": c}, collector.Options{Discoverer: disc, Problems: problems, Logger: log}), problems, logs, c, disc}
}

// scrape gathers through a pedantic registry (duplicate or inconsistent
// series fail it) and returns the exposition.
func (r *badRun) scrape(t *testing.T) string {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(r.exp.Bind(context.Background()))
	return string(testutil.Exposition(t, reg))
}

// collectOnce runs the collector once by itself, outside the exporter,
// whose scrapes share one collection: two such runs can overlap, as a
// collection cut short by its deadline can overlap the next one.
func (r *badRun) collectOnce(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	s := collectortest.ScrapeWith(ctx, "cgroup", collector.ScrapeOptions{
		Jobs: r.disc.Discover(ctx, func(string, error) {}), Problems: r.problems})
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(onceCollector{r.c, s})
	return string(testutil.Exposition(t, reg))
}

type onceCollector struct {
	c collector.Collector
	s *collector.Scrape
}

func (o onceCollector) Describe(chan<- *prometheus.Desc) {}
func (o onceCollector) Collect(ch chan<- prometheus.Metric) {
	if err := o.c.Collect(o.s, ch); err != nil {
		panic(err)
	}
}

func countSeries(expo, prefix string) int {
	n := 0
	for _, l := range strings.Split(expo, "\n") {
		if strings.HasPrefix(l, prefix) {
			n++
		}
	}
	return n
}

const job100 = "cgroup/system.slice/slurmstepd.scope/job_100"

func TestBadCgroupFiles(t *testing.T) {
	cases := []struct {
		name, file, content, cause, missing string
	}{
		{"empty", "memory.current", "", "malformed_file", `slurm_job_memory_usage_bytes{account="physics"`},
		{"garbage", "memory.peak", "\x00\xffnot a number\n", "malformed_file", `slurm_job_memory_peak_bytes{account="physics"`},
		{"truncated stat", "memory.stat", "anon 1879048192\nfile 2411", "", ""},
		{"garbage keyed", "cpu.stat", "usage_usec\nuser_usec abc\nsystem_usec 5\nsystem_usec 6\n", "malformed_file", `slurm_job_cpu_usage_seconds_total{account="physics"`},
		{"truncated psi", "io.pressure", "some avg10=0.00 avg60=0.", "malformed_file", `slurm_job_pressure_stalled_seconds_total{account="physics",jobid="100",resource="io"`},
		{"garbage io.stat", "io.stat", "8:0 rbytes=1 wbytes=x\nnonsense\n8:0 rbytes=5\n", "malformed_file", ""},
		// cpuset.cpus (the configured set) stands in for a broken effective set.
		{"bad cpuset", "cpuset.cpus.effective", "3-1\n", "malformed_file", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			root := badNode(t)
			if err := os.WriteFile(filepath.Join(root, job100, tc.file), []byte(tc.content), 0o644); err != nil {
				t.Fatal(err)
			}
			r := newBadRun(t, root)
			for range 3 {
				out := r.scrape(t)
				if got := countSeries(out, `jobscope_scrape_collector_success{collector="cgroup"} 1`); got != 1 {
					t.Fatalf("cgroup collector failed the scrape on one bad file:\n%s", out)
				}
				if tc.missing != "" && countSeries(out, tc.missing) != 0 {
					t.Errorf("series from the broken file still present: %s", tc.missing)
				}
				// The other jobs are whole.
				if countSeries(out, `slurm_job_memory_usage_bytes{account="chemistry",jobid="101"`) != 1 {
					t.Errorf("job 101 lost its memory series")
				}
			}
			if tc.cause != "" {
				if got := r.problems.Count("cgroup", tc.cause); got != 3 {
					t.Errorf("%s counted %v times over 3 scrapes, want 3", tc.cause, got)
				}
				if n := strings.Count(r.logs.String(), "cause="+tc.cause); n != 1 {
					t.Errorf("cause %s logged %d times, want once:\n%s", tc.cause, n, r.logs)
				}
			}
		})
	}
}

// deniedRootEnv hands TestPermissionDenied's prepared node to the copy of
// the test that runs as an unprivileged uid.
const deniedRootEnv = "JOBSCOPE_TEST_DENIED_ROOT"

// unprivilegedUID runs the child: nobody's uid, which owns none of the
// fixture's files.
const unprivilegedUID = 65534

// TestPermissionDenied: a file the exporter may not read is that file's
// permission_denied; the job's other files are read. Root reads a file of
// mode 000, and a planted link to an unreadable file is not followed
// (cgroupfs opens with O_NOFOLLOW), so as root (CI) the tree is prepared
// here and the checks run in a copy of this test under an unprivileged uid.
func TestPermissionDenied(t *testing.T) {
	root := os.Getenv(deniedRootEnv)
	if root == "" {
		root = badNode(t)
		if err := os.Chmod(filepath.Join(root, job100, "memory.stat"), 0); err != nil {
			t.Fatal(err)
		}
		if os.Geteuid() == 0 {
			runUnprivileged(t, "TestPermissionDenied", root)
			return
		}
	} else if os.Geteuid() == 0 {
		t.Fatal("the unprivileged copy runs as root")
	}
	r := newBadRun(t, root)
	out := r.scrape(t)
	if countSeries(out, `slurm_job_memory_stat_bytes{account="physics"`) != 0 {
		t.Error("memory.stat series of the denied file present")
	}
	if countSeries(out, `slurm_job_memory_usage_bytes{account="physics"`) != 1 {
		t.Error("the job's other files were not read")
	}
	if r.problems.Count("cgroup", "permission_denied") == 0 {
		t.Error("permission_denied not counted")
	}
}

// runUnprivileged runs test of this binary as unprivilegedUID over root,
// the node the parent prepared, and fails if the child fails or does not
// run the test to its end.
func runUnprivileged(t *testing.T, test, root string) {
	t.Helper()
	// The child must reach root and the binary: t.TempDir's directories
	// are root's with mode 0700, and so is the go command's build dir.
	dir := t.TempDir()
	for _, d := range []string{filepath.Dir(root), root, filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "cgroup.test")
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), bin, "-test.run=^"+test+"$", "-test.count=1", "-test.v")
	cmd.Dir = root
	cmd.Env = []string{"PATH=/usr/bin:/bin", "TMPDIR=/tmp", deniedRootEnv + "=" + root}
	// Groups: none; root's supplementary groups would stay otherwise.
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: unprivilegedUID, Gid: unprivilegedUID, Groups: []uint32{}}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s as uid %d: %v\n%s", test, unprivilegedUID, err, out)
	}
	if !strings.Contains(string(out), "--- PASS: "+test+" ") {
		t.Fatalf("%s did not run as uid %d:\n%s", test, unprivilegedUID, out)
	}
}

// A job cgroup removed between discovery and reading: silent, no series of
// that job except what was read, no error counted.
func TestJobRemovedMidScrape(t *testing.T) {
	root := badNode(t)
	jobDir := filepath.Join(root, job100)
	// memory.peak becomes a FIFO: the collector's read of it waits until
	// this test has removed the job, so the removal falls between the job's
	// files, after its directory was opened.
	peak := filepath.Join(jobDir, "memory.peak")
	if err := os.Remove(peak); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mkfifo(peak, 0o644); err != nil {
		t.Fatal(err)
	}
	removed := make(chan error, 1)
	go func() {
		w, err := os.OpenFile(peak, os.O_WRONLY, 0) // returns once the collector opens it
		if err != nil {
			removed <- err
			return
		}
		defer w.Close()
		if err := os.RemoveAll(jobDir); err != nil {
			removed <- err
			return
		}
		_, err = w.WriteString("1048576\n")
		removed <- err
	}()
	r := newBadRun(t, root)
	out := r.scrape(t)
	select {
	case err := <-removed:
		if err != nil {
			t.Fatal(err)
		}
	default:
		// Let the writer go, then fail.
		if f, err := os.OpenFile(peak, os.O_RDONLY|unix.O_NONBLOCK, 0); err == nil {
			defer f.Close()
		}
		t.Fatal("the collector never read memory.peak")
	}
	if countSeries(out, `slurm_job_memory_peak_bytes{account="physics",jobid="100"`) != 1 {
		t.Error("memory.peak, read before the removal, not reported")
	}
	if countSeries(out, `slurm_job_memory_usage_bytes{account="chemistry",jobid="101"`) != 1 {
		t.Error("other jobs lost")
	}
	// memory.stat and pids.current are read after memory.peak.
	for _, later := range []string{`slurm_job_memory_stat_bytes{account="physics",jobid="100"`, `slurm_job_pids{account="physics",jobid="100"`} {
		if countSeries(out, later) != 0 {
			t.Errorf("series of the removed job after its removal: %s", later)
		}
	}
	for _, cause := range []string{"read_failed", "malformed_file", "permission_denied"} {
		if r.problems.Count("cgroup", cause) != 0 {
			t.Errorf("vanished job counted as %s", cause)
		}
	}
	// Next scrape: the job is gone entirely.
	r2 := newBadRun(t, root)
	if out := r2.scrape(t); countSeries(out, `slurm_job_info{account="physics"`) != 0 {
		t.Error("removed job still listed")
	}
}

func TestThousandsOfJobs(t *testing.T) {
	root := t.TempDir()
	scope := filepath.Join(root, "system.slice", "slurmstepd.scope")
	const n = 3000
	for i := range n {
		d := filepath.Join(scope, fmt.Sprintf("job_%d", i+1))
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "memory.current"), []byte(fmt.Sprintf("%d\n", i)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	disc := discovery.New(discovery.Config{Layout: discovery.Layout{V2: root}, ProcFS: t.TempDir()})
	exp := collector.NewExporter(map[string]collector.Collector{"cgroup": New(Options{})}, collector.Options{Discoverer: disc, Problems: collector.NewProblems(nil)})
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(exp.Bind(context.Background()))
	if got := promtest.CollectAndCount(reg, "slurm_job_memory_usage_bytes"); got != n {
		t.Fatalf("got %d memory series, want %d", got, n)
	}
}

// newBadRunV1 is newBadRun over a v1 fixture copy.
func newBadRunV1(t *testing.T, root string) *badRun {
	t.Helper()
	layout, err := discovery.DetectLayout(filepath.Join(root, "cgroup"), "")
	if err != nil {
		t.Fatal(err)
	}
	logs := &bytes.Buffer{}
	log := slog.New(slog.NewTextHandler(logs, nil))
	disc := discovery.New(discovery.Config{Layout: layout, ProcFS: filepath.Join(root, "proc"),
		LookupUser: collectortest.LookupUser})
	problems := collector.NewProblems(log)
	// Full level: every file the collector can read is read, so every bad
	// file is met.
	c := New(Options{SysFS: filepath.Join(root, "sys"), Level: collector.LevelFull})
	return &badRun{collector.NewExporter(map[string]collector.Collector{"cgroup": c}, collector.Options{Discoverer: disc, Problems: problems, Logger: log}), problems, logs, c, disc}
}

// A repeated memory.stat key (v1 maps total_rss to type="anon") gives one
// series: de-dup is on the raw key, so the gather does not fail on a
// duplicate. Real kernels print each key once; this is a broken file.
func TestV1MemoryStatRepeatedKey(t *testing.T) {
	root := t.TempDir()
	testutil.CopyTree(t, filepath.Join("..", "..", "testdata", "node-v1"), root)
	stat := filepath.Join(root, "cgroup", "memory", "slurm_vm", "uid_1002", "job_3", "memory.stat")
	b, err := os.ReadFile(stat)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(stat, append(b, "total_rss 7\ntotal_swap 9\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	out := newBadRunV1(t, root).scrape(t)
	if n := countSeries(out, `slurm_job_memory_stat_bytes{account="chemistry",jobid="3",type="anon"`); n != 1 {
		t.Errorf("anon series of job 3: %d, want 1", n)
	}
	if strings.Contains(out, `type="anon",user="bob"} 7`) {
		t.Error("the repeated line's value replaced the first one")
	}
}

// No two keys of a flat file give the same series: a table with two raw
// keys for one type would duplicate it even with de-dup on the raw key.
func TestFlatTablesDistinct(t *testing.T) {
	d := newCgroupDescs()
	for name, tab := range map[string]*flatTable{"v1 memory.stat": memStatV1, "v2 memory.stat": memStatV2,
		"memory.events": memEventsV2, "v1 cpu.stat": cpuStatV1, "cpuacct.stat": cpuacctStat} {
		seen := map[string]string{}
		for _, k := range tab.keys {
			series := k.desc(&d).Name + "{" + k.label + "}"
			if other, dup := seen[series]; dup {
				t.Errorf("%s: %s and %s both give %s", name, other, k.key, series)
			}
			seen[series] = k.key
		}
	}
}
