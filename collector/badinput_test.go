package collector

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	promtest "github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/jobscope/jobscope/collector/discovery"
	"github.com/jobscope/jobscope/internal/testutil"
)

// badNode copies the v2 fixture node into a temp dir that a test may break.
func badNode(t *testing.T) string {
	t.Helper()
	dst := t.TempDir()
	if out, err := exec.Command("cp", "-a", filepath.Join("..", "testdata", "node-v2")+"/.", dst).CombinedOutput(); err != nil {
		t.Fatalf("copy fixture: %v %s", err, out)
	}
	return dst
}

type badRun struct {
	exp      *Exporter
	problems *Problems
	logs     *bytes.Buffer
}

func newBadRun(t *testing.T, root string, fault func(string) error) *badRun {
	t.Helper()
	logs := &bytes.Buffer{}
	log := slog.New(slog.NewTextHandler(logs, nil))
	disc := discovery.New(discovery.Config{
		Layout: discovery.Layout{V2: filepath.Join(root, "cgroup")}, ProcFS: filepath.Join(root, "proc"),
		PropsDir: filepath.Join(root, "props"), LookupUser: lookupFixtureUser,
		ProcOwner: fixtureOwner,
	})
	problems := NewProblems(log)
	c := NewCgroupCollector(CgroupOptions{SysFS: filepath.Join(root, "sys"), Fault: fault})
	return &badRun{NewExporter(map[string]Collector{"cgroup": c}, disc, problems, log, BuildInfo{}), problems, logs}
}

// scrape gathers through a pedantic registry (duplicate or inconsistent
// series fail it) and returns the exposition.
func (r *badRun) scrape(t *testing.T) string {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(r.exp.Bind(context.Background()))
	return string(testutil.Exposition(t, reg))
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
			r := newBadRun(t, root, nil)
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

func TestPermissionDenied(t *testing.T) {
	root := badNode(t)
	denied := filepath.Join(root, job100, "memory.stat")
	r := newBadRun(t, root, func(p string) error {
		if p == denied {
			return &fs.PathError{Op: "open", Path: p, Err: fs.ErrPermission}
		}
		return nil
	})
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

// A job cgroup removed between discovery and reading: silent, no series of
// that job except what was read, no error counted.
func TestJobRemovedMidScrape(t *testing.T) {
	root := badNode(t)
	jobDir := filepath.Join(root, job100)
	removed := false
	r := newBadRun(t, root, func(p string) error {
		// Remove the job after its directory was opened, before its
		// second file is read.
		if strings.HasPrefix(p, jobDir+"/memory.peak") && !removed {
			removed = true
			return os.RemoveAll(jobDir)
		}
		return nil
	})
	out := r.scrape(t)
	if countSeries(out, `slurm_job_memory_usage_bytes{account="chemistry",jobid="101"`) != 1 {
		t.Error("other jobs lost")
	}
	if countSeries(out, `slurm_job_cpu_usage_seconds_total{account="physics",jobid="100"`) != 0 {
		t.Error("series of the removed job after its removal")
	}
	for _, cause := range []string{"read_failed", "malformed_file", "permission_denied"} {
		if r.problems.Count("cgroup", cause) != 0 {
			t.Errorf("vanished job counted as %s", cause)
		}
	}
	// Next scrape: the job is gone entirely.
	r2 := newBadRun(t, root, nil)
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
	exp := NewExporter(map[string]Collector{"cgroup": NewCgroupCollector(CgroupOptions{})}, disc, NewProblems(nil), nil, BuildInfo{})
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
		LookupUser: lookupFixtureUser})
	problems := NewProblems(log)
	c := NewCgroupCollector(CgroupOptions{SysFS: filepath.Join(root, "sys")})
	return &badRun{NewExporter(map[string]Collector{"cgroup": c}, disc, problems, log, BuildInfo{}), problems, logs}
}
