// SPDX-License-Identifier: Apache-2.0

package report

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/jobscope/jobscope/internal/testutil"
	"github.com/jobscope/jobscope/slurmcli"
	"github.com/jobscope/jobscope/slurmcli/slurmclitest"
)

// fixtureRun is one `jobscope report` invocation over the scenario; its
// stdout (or stderr, for failures) is a golden file.
type fixtureRun struct {
	name   string
	args   []string
	exit   int
	golden string // file under testdata/golden; "" for none
	stderr bool   // the golden is stderr
}

var oldKey = "c1/777/" + "1771574400" // bob's job 777 of 2026-02-20T08:00:00Z

var fixtureRuns = []fixtureRun{
	{name: "multi-node GPU job, text", args: []string{"4242"}, golden: "job-4242.txt"},
	{name: "multi-node GPU job, JSON", args: []string{"--format=json", "4242"}, golden: "job-4242.json"},
	{name: "multi-node GPU job, HTML", args: []string{"--format=html", "4242"}},
	{name: "reused id: ask", args: []string{"777"}, exit: ExitAmbiguous, golden: "job-777-ask.stderr", stderr: true},
	{name: "reused id: latest, another user's running job", args: []string{"--reused=latest", "777"}, golden: "job-777-latest.txt"},
	{name: "reused id: by key", args: []string{"--job-key=" + oldKey, "--format=json", "777"}, golden: "job-777-old.json"},
	{name: "OOM killed", args: []string{"555"}, golden: "job-555.txt"},
	{name: "unknown job", args: []string{"900"}, exit: ExitFailed, golden: "job-900.stderr", stderr: true},
	{name: "job without samples", args: []string{"901"}, exit: ExitFailed, golden: "job-901.stderr", stderr: true},
	{name: "job with slurm_job_info only", args: []string{"902"}, exit: ExitFailed, golden: "job-902.stderr", stderr: true},
	{name: "malformed job id", args: []string{"12;rm"}, exit: ExitUsage, golden: "job-bad.stderr", stderr: true},
	{name: "usage of a user, text", args: []string{"--user=alice", "--since=30d"}, golden: "usage-alice.txt"},
	{name: "usage of a user, JSON", args: []string{"--user=alice", "--since=30d", "--format=json"}, golden: "usage-alice.json"},
	{name: "usage of a user, CSV", args: []string{"--user=alice", "--since=30d", "--format=csv"}, golden: "usage-alice.csv"},
	{name: "usage of an account", args: []string{"--account=chemistry", "--since=14d"}, golden: "usage-chemistry.txt"},
}

// scenarioOptions are the fixed parts of every fixture run: the time, the
// zone, the caller (alice) and a fake sacct with the scenario's records.
func scenarioOptions(t *testing.T, rt http.RoundTripper) Options {
	b := slurmclitest.New(t)
	b.Script("sacct", fakeSacctScript())
	return Options{Now: func() time.Time { return scenarioNow }, Location: time.UTC, Transport: rt,
		Slurm: &slurmcli.Runner{BinDir: b.Dir}, CurrentUser: "alice"}
}

func runFixture(t *testing.T, url string, o Options, fr fixtureRun) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	args := append([]string{"--config=testdata/report.yml", "--prometheus.url=" + url, "--color=never"}, fr.args...)
	code = mainWith(context.Background(), args, &out, &errb, false, o)
	// The replay server's port changes from run to run.
	return strings.ReplaceAll(out.String(), url, "PROMETHEUS"), strings.ReplaceAll(errb.String(), url, "PROMETHEUS"), code
}

// TestRecordFixture rebuilds the fixture from a real Prometheus (-record).
func TestRecordFixture(t *testing.T) {
	if !*record {
		t.Skip("records only with -record")
	}
	lp := startScenarioPrometheus(t)
	rec := &recorder{next: http.DefaultTransport, got: map[string]answer{}}
	for _, fr := range fixtureRuns {
		stdout, stderr, code := runFixture(t, lp.url, scenarioOptions(t, rec), fr)
		if code != fr.exit {
			t.Fatalf("%s: exit %d, want %d\nstderr: %s", fr.name, code, fr.exit, stderr)
		}
		writeGolden(t, fr, stdout, stderr)
	}
	writeFixture(t, rec.got)
	t.Logf("recorded %d answers", len(rec.got))
}

func writeGolden(t *testing.T, fr fixtureRun, stdout, stderr string) {
	if fr.golden == "" {
		return
	}
	got := stdout
	if fr.stderr {
		got = stderr
	}
	p := filepath.Join("testdata", "golden", fr.golden)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(got), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestGoldenReports replays the recorded answers and compares every
// output with its golden file (-update rewrites them).
func TestGoldenReports(t *testing.T) {
	rp := loadReplay(t)
	srv := rp.server(t)
	for _, fr := range fixtureRuns {
		t.Run(fr.name, func(t *testing.T) {
			stdout, stderr, code := runFixture(t, srv.URL, scenarioOptions(t, nil), fr)
			if code != fr.exit {
				t.Fatalf("exit %d, want %d\nstderr: %s", code, fr.exit, stderr)
			}
			if fr.exit == ExitOK && stderr != "" {
				t.Errorf("stderr: %s", stderr)
			}
			if fr.golden == "" {
				return
			}
			got := stdout
			if fr.stderr {
				got = stderr
			}
			testutil.GoldenText(t, filepath.Join("testdata", "golden", fr.golden), []byte(got))
			if strings.HasSuffix(fr.golden, ".txt") {
				for i, l := range strings.Split(got, "\n") {
					if n := utf8.RuneCountInString(l); n > Width {
						t.Errorf("line %d has %d columns (max %d): %q", i+1, n, Width, l)
					}
				}
			}
		})
	}
}
