// SPDX-License-Identifier: Apache-2.0

package report

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jobscope/jobscope/internal/js1"
	"github.com/jobscope/jobscope/slurmcli"
	"github.com/jobscope/jobscope/slurmcli/slurmclitest"
)

func newTally() *summaryTally {
	return &summaryTally{Skipped: map[string]int{}, Failed: map[string]int{}, logged: map[string]bool{},
		log: slog.New(slog.NewTextHandler(io.Discard, nil))}
}

var modifyLine = regexp.MustCompile(`^modify job where jobid=([0-9]+) set AdminComment='([^']*)'$`)

// storedComments reads what the fake sacctmgr was fed, as slurmdbd would
// have stored it.
func storedComments(t *testing.T, stdinLog string) map[string]string {
	t.Helper()
	data, err := os.ReadFile(stdinLog)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, l := range strings.Split(string(data), "\n") {
		if m := modifyLine.FindStringSubmatch(l); m != nil {
			out[m[1]] = m[2]
		}
	}
	return out
}

func rec(id, user, comment string) slurmcli.CommentRecord {
	return slurmcli.CommentRecord{SacctRecord: slurmcli.SacctRecord{ID: id, User: user, State: "COMPLETED",
		Start: time.Unix(1700000000, 0), End: time.Unix(1700000600, 0), Elapsed: 10 * time.Minute}, AdminComment: comment}
}

func fakeSacctmgr(t *testing.T) (*slurmclitest.Bin, string) {
	b := slurmclitest.New(t)
	stdinLog := filepath.Join(b.Log, "sacctmgr.stdin")
	b.Script("sacctmgr", "cat >> '"+stdinLog+"'")
	return b, stdinLog
}

// The writer fills empty comments only, in batches of one sacctmgr process
// fed on stdin, and never touches a comment that is not a JS1 summary.
func TestSummaryWriterBatchesAndNeverOverwrites(t *testing.T) {
	const admins = "reviewed by ops: keep"
	old := "JS1:H4sIAAAAAAAA/6quBQQAAP//AAAAAAAAAAA="
	for _, refresh := range []bool{false, true} {
		b, stdinLog := fakeSacctmgr(t)
		tally := newTally()
		var summarized []string
		w := &summaryWriter{slurm: &slurmcli.Runner{BinDir: b.Dir}, batch: 2, refresh: refresh, tally: tally,
			summarize: func(_ context.Context, r slurmcli.CommentRecord) (*js1.Summary, string, error) {
				summarized = append(summarized, r.ID)
				return &js1.Summary{TotalTime: 600, Nodes: map[string]js1.Node{"n1": {CPUs: 1, TotalTime: 590}}}, "", nil
			},
			readBack: func(context.Context, []string) (map[string]string, error) { return storedComments(t, stdinLog), nil },
		}
		recs := []slurmcli.CommentRecord{rec("1", "carol", ""), rec("2", "carol", admins), rec("3", "carol", old),
			rec("4", "carol", "  "), rec("5", "carol", ""), rec("6", "carol", "js1:not ours")}
		w.write(context.Background(), recs)
		stored := storedComments(t, stdinLog)
		want := []string{"1", "4", "5"}
		if refresh {
			want = []string{"1", "3", "4", "5"}
		}
		if got := strings.Join(summarized, ","); got != strings.Join(want, ",") {
			t.Errorf("refresh=%v: summarized %s, want %v", refresh, got, want)
		}
		if _, ok := stored["2"]; ok || len(stored) != len(want) {
			t.Errorf("refresh=%v: stored %v", refresh, stored)
		}
		if _, ok := stored["6"]; ok {
			t.Errorf("a non-JS1 comment was overwritten")
		}
		for _, id := range want {
			if s, err := js1.Decode(stored[id]); err != nil || s.Nodes["n1"].TotalTime != 590 {
				t.Errorf("job %s: stored %q: %v", id, stored[id], err)
			}
		}
		procs := 1 + len(want)/2 // a first batch of one, then batches of 2
		if tally.Written != len(want) || tally.Sacctmgr != procs || len(b.Runs("sacctmgr")) != procs {
			t.Errorf("refresh=%v: %s; runs %q", refresh, tally, b.Runs("sacctmgr"))
		}
		for _, args := range b.Runs("sacctmgr") {
			if args != "-i" {
				t.Errorf("sacctmgr run with %q, want only -i (commands on stdin)", args)
			}
		}
		if tally.Skipped[skipOther] != 2 {
			t.Errorf("skipped %v", tally.Skipped)
		}
	}
}

// A summary sacctmgr did not store (read back differs) is a failure, not
// a job counted as written.
func TestSummaryWriterCountsWhatWasNotStored(t *testing.T) {
	b, _ := fakeSacctmgr(t)
	tally := newTally()
	w := &summaryWriter{slurm: &slurmcli.Runner{BinDir: b.Dir}, batch: 10, tally: tally,
		summarize: func(context.Context, slurmcli.CommentRecord) (*js1.Summary, string, error) {
			return &js1.Summary{Nodes: map[string]js1.Node{}}, "", nil
		},
		readBack: func(context.Context, []string) (map[string]string, error) { return map[string]string{}, nil },
	}
	w.write(context.Background(), []slurmcli.CommentRecord{rec("1", "carol", ""), rec("2", "carol", "")})
	if tally.Written != 0 || tally.Failed[failNotStored] != 2 {
		t.Fatalf("%s", tally)
	}
}

// What the report builds back from a summary agrees with the report it was
// made from, and says where it came from in text, JSON and HTML.
func TestReportFromSummary(t *testing.T) {
	rp := loadReplay(t)
	srv := rp.server(t)
	o := scenarioOptions(t, nil)
	cfg, err := LoadConfig("testdata/report.yml", true)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Prometheus.URL = srv.URL
	o.Config = cfg
	r, err := newRunner(o)
	if err != nil {
		t.Fatal(err)
	}
	r.noCharts = true
	orig, err := r.job(context.Background(), "4242")
	if err != nil {
		t.Fatal(err)
	}
	c, err := js1.Encode(toSummary(orig))
	if err != nil {
		t.Fatal(err)
	}
	s, err := js1.Decode(c)
	if err != nil {
		t.Fatal(err)
	}
	cr := slurmcli.CommentRecord{SacctRecord: slurmcli.SacctRecord{ID: "4242", User: orig.Job.User, State: "COMPLETED",
		Start: orig.Job.StartTime, End: orig.Job.StartTime.Add(time.Duration(orig.Job.ElapsedSeconds) * time.Second),
		Elapsed: time.Duration(orig.Job.ElapsedSeconds) * time.Second}, AdminComment: c}
	rep := r.fromSummary(cr, s)
	near := func(name string, a, b *float64) {
		t.Helper()
		if a == nil || b == nil || *a < *b*0.999 || *a > *b*1.001 {
			t.Errorf("%s: summary %v, Prometheus %v", name, deref(a), deref(b))
		}
	}
	near("cpu used", rep.CPU.UsedSeconds, orig.CPU.UsedSeconds)
	near("memory peak", rep.Memory.PeakBytes, orig.Memory.PeakBytes)
	near("gpu utilization", rep.GPU.UtilizationMean, orig.GPU.UtilizationMean)
	if rep.CPU.Cores != orig.CPU.Cores || len(rep.Nodes) != len(orig.Nodes) || rep.GPU.Count != orig.GPU.Count ||
		len(rep.GPU.Devices) != len(orig.GPU.Devices) {
		t.Errorf("cores %v/%v nodes %d/%d gpus %d/%d devices %d/%d", rep.CPU.Cores, orig.CPU.Cores, len(rep.Nodes),
			len(orig.Nodes), rep.GPU.Count, orig.GPU.Count, len(rep.GPU.Devices), len(orig.GPU.Devices))
	}
	var text, page bytes.Buffer
	if err := WriteText(&text, rep, time.UTC, false); err != nil {
		t.Fatal(err)
	}
	if err := WriteHTML(&page, rep, time.UTC); err != nil {
		t.Fatal(err)
	}
	js, _ := json.Marshal(rep)
	for name, out := range map[string]string{"text": strings.Join(strings.Fields(text.String()), " "),
		"html": page.String(), "json": string(js)} {
		if !strings.Contains(out, "from the job&#39;s accounting summary") && !strings.Contains(out, "from the job's accounting summary") &&
			!strings.Contains(out, `from the job\u0027s accounting summary`) {
			t.Errorf("%s output does not say it is from the summary", name)
		}
	}
}

// `jobscope report ID` for a job Prometheus does not hold reads its
// AdminComment; a comment that is not a summary changes nothing.
func TestReportFallsBackToSummary(t *testing.T) {
	rp := loadReplay(t)
	srv := rp.server(t)
	sum := &js1.Summary{GPUs: 0, TotalTime: 600, Nodes: map[string]js1.Node{"n07": {CPUs: 2, TotalMemory: 1 << 30,
		UsedMemory: 1 << 29, TotalTime: 300}}, Jobscope: &js1.Extra{Version: 1, User: "carol"}}
	c, err := js1.Encode(sum)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		comment string
		exit    int
	}{{c, ExitOK}, {"reviewed", ExitFailed}, {"JS1:%%%", ExitFailed}} {
		o := scenarioOptions(t, nil)
		b := slurmclitest.New(t)
		line := strings.Join([]string{"900", "carol", "physics", "c1", "COMPLETED", "2026-03-01T10:00:00",
			"2026-03-01T10:10:00", "600", "2", "cpu=2,mem=1G,node=1", "1", "n07", tc.comment}, "|")
		b.Script("sacct", slurmclitest.FindSep+"\necho '"+line+"' | "+slurmclitest.ToSep(13))
		o.Slurm = &slurmcli.Runner{BinDir: b.Dir}
		var out, errb bytes.Buffer
		code := mainWith(context.Background(), []string{"--config=testdata/report.yml", "--prometheus.url=" + srv.URL,
			"--format=json", "900"}, &out, &errb, false, o)
		if code != tc.exit {
			t.Fatalf("comment %q: exit %d, want %d; %s", tc.comment, code, tc.exit, errb.String())
		}
		if tc.exit != ExitOK {
			if tc.comment == "JS1:%%%" && !strings.Contains(errb.String(), "accounting summary could not be read") {
				t.Errorf("bad summary not explained: %s", errb.String())
			}
			continue
		}
		var rep Report
		if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
			t.Fatal(err)
		}
		if rep.Job.StartSource != SourceSummary || deref(rep.CPU.UsedSeconds) != 300 || rep.CPU.Cores != 2 ||
			deref(rep.CPU.Efficiency) != 0.25 || rep.Job.User != "carol" || len(rep.Notes) == 0 || rep.Notes[0] != SummaryNote {
			t.Errorf("report %+v", rep)
		}
	}
}

// A sacctmgr that stores AdminComment in lower case (Slurm 22.05) spoils one
// job at most: the first batch holds one job, and the run stops there.
func TestSummaryWriterStopsWhenSacctmgrLowercases(t *testing.T) {
	b, stdinLog := fakeSacctmgr(t)
	tally := newTally()
	w := &summaryWriter{slurm: &slurmcli.Runner{BinDir: b.Dir}, batch: 10, tally: tally,
		summarize: func(context.Context, slurmcli.CommentRecord) (*js1.Summary, string, error) {
			return &js1.Summary{TotalTime: 1, Nodes: map[string]js1.Node{"n1": {CPUs: 1}}}, "", nil
		},
		readBack: func(context.Context, []string) (map[string]string, error) {
			got := storedComments(t, stdinLog)
			for k, v := range got {
				got[k] = strings.ToLower(v)
			}
			return got, nil
		},
	}
	w.write(context.Background(), []slurmcli.CommentRecord{rec("1", "carol", ""), rec("2", "carol", ""), rec("3", "carol", "")})
	if tally.Written != 0 || tally.Failed[failLowercased] != 3 || tally.Sacctmgr != 1 || len(storedComments(t, stdinLog)) != 1 {
		t.Fatalf("%s; stored %v", tally, storedComments(t, stdinLog))
	}
}

func TestLowercasingSlurm(t *testing.T) {
	for v, want := range map[string]bool{"slurm 22.05.8\n": true, "slurm 21.08.5": true, "slurm-wlm 22.05.8": true, "slurm 23.11.4": false,
		"slurm-wlm 24.05.1": false, "": false, "garbage": false} {
		if got := lowercasingSlurm(v); got != want {
			t.Errorf("%q: %v, want %v", v, got, want)
		}
	}
}
