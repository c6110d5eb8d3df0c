// SPDX-License-Identifier: Apache-2.0

package slurmcli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jobscope/jobscope/slurmcli/slurmclitest"
)

// squeue --json of 22.05 lists every job slurmctld holds, whatever
// --nodelist says: the parser returns them all, with array tasks by
// their own ids.
func TestParseNodeJobsJSON2205(t *testing.T) {
	jobs, err := ParseNodeJobsJSON(openFixture(t, "squeue-running.json"))
	if err != nil {
		t.Fatal(err)
	}
	by := map[string]NodeJob{}
	for _, j := range jobs {
		by[j.ID] = j
	}
	j := by["3"]
	want := NodeJob{ID: "3", User: "bob", UID: 1002, Account: "chemistry", Partition: "batch", QOS: "normal", Name: "memhog", Cluster: "testcluster", StartTime: 1795262983}
	if j != want {
		t.Errorf("job 3:\n got %+v\nwant %+v", j, want)
	}
	if j := by["2"]; j.ArrayJobID != "" || j.ArrayTaskID != "" || j.SLUID != "" {
		t.Errorf("job 2 is no array and has no SLUID: %+v", j)
	}
	if _, ok := by["7"]; !ok || len(jobs) < 10 {
		t.Errorf("%d jobs; the unsplit array 7 must be there", len(jobs))
	}
}

// The text form: raw ids, array tasks, (null), a | in a job name, start
// times in local time; a line that is no record is left out alone.
func TestParseNodeJobsText(t *testing.T) {
	in := withSep([]byte("12|7|2|bob|1002|chemistry|normal|batch|2026-11-21T12:09:43|arr\n"+
		"3|3|N/A|alice|1001|(null)|(null)|debug|2026-11-21T12:09:43|a|b|c\n\n"), 10, testSep)
	jobs, ref, err := ParseNodeJobsText(bytes.NewReader(in), time.UTC, testSep)
	if err != nil || ref.Records != 0 {
		t.Fatal(err, ref)
	}
	if len(jobs) != 2 {
		t.Fatalf("%d jobs", len(jobs))
	}
	if j := jobs[0]; j.ID != "12" || j.ArrayJobID != "7" || j.ArrayTaskID != "2" || j.UID != 1002 || j.StartTime != 1795262983 {
		t.Errorf("array task: %+v", j)
	}
	if j := jobs[1]; j.Account != "" || j.QOS != "" || j.Name != "a|b|c\n" || j.ArrayJobID != "" {
		t.Errorf("job 3: %+v", j)
	}
	// A record with a bad id is left out; output with no record of the
	// form asked for is not an answer.
	bad := "abc|7|2|bob|1002|chemistry|normal|batch|2026-11-21T12:09:43|arr\n"
	jobs, ref, err = ParseNodeJobsText(bytes.NewReader(withSep([]byte(bad), 10, testSep)), time.UTC, testSep)
	if err != nil || len(jobs) != 0 || ref.Records != 1 {
		t.Errorf("%q: jobs %+v, refused %+v, err %v", bad, jobs, ref, err)
	}
	if _, _, err := ParseNodeJobsText(bytes.NewReader(withSep([]byte("x|1|2|3\n"), 10, testSep)), time.UTC, testSep); err == nil {
		t.Error("4 fields accepted as an answer")
	}
}

// Slurm 26.05 carries the SLUID in step_id.sluid and numbers as objects.
func TestParseNodeJobsJSONSLUID(t *testing.T) {
	in := `{"jobs":[{"job_id":{"set":true,"number":42},"step_id":{"sluid":"sDVNM87TZNTA00"},"array_job_id":{"set":true,"number":40},` +
		`"array_task_id":{"set":true,"number":2},"user_name":"alice","user_id":{"set":true,"number":1001},"account":"(null)",` +
		`"start_time":{"set":true,"number":1795000000},"name":"x"},{"job_id":{"set":true,"number":43},"sluid":"not-a-sluid"}],"errors":[]}`
	jobs, err := ParseNodeJobsJSON(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if j := jobs[0]; j.SLUID != "sDVNM87TZNTA00" || j.ID != "42" || j.ArrayJobID != "40" || j.ArrayTaskID != "2" || j.Account != "" || j.StartTime != 1795000000 {
		t.Errorf("%+v", j)
	}
	if jobs[1].SLUID != "" || jobs[1].UID != -1 {
		t.Errorf("%+v", jobs[1])
	}
	if _, err := ParseNodeJobsJSON(strings.NewReader(`{"errors":[{"error":"Unable to contact slurm controller"}]}`)); err == nil || !strings.Contains(err.Error(), "contact") {
		t.Errorf("errors without jobs: %v", err)
	}
}

func TestIsSLUID(t *testing.T) {
	for s, want := range map[string]bool{
		"sDVNM87TZNTA00": true, "s0000000000000": true,
		"SDVNM87TZNTA00": false, "sDVNM87TZNTA0": false, "sDVNM87TZNTA000": false,
		"sDVNM87TZNTAI0": false, "sdvnm87tzntA00": false, "job_123": false, "": false,
	} {
		if IsSLUID(s) != want {
			t.Errorf("IsSLUID(%q) = %v", s, !want)
		}
	}
}

// One squeue per query, in the form asked for; a squeue without --json
// falls back to text; node names that could be options are refused.
func TestQueryNodeJobs(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "squeue")
	log := filepath.Join(dir, "args")
	// A fake squeue that records its arguments and answers like 22.05's
	// text form with the separator asked for, or refuses --json like a
	// Slurm without it.
	body := "#!/bin/sh\necho \"$*\" >>" + log + "\ncase \"$*\" in *--json*) echo \"squeue: unrecognized option '--json'\" >&2; exit 1;; esac\n" +
		slurmclitest.FindSep + "\necho '5|5|N/A|bob|1002|chem|normal|batch|2026-11-21T12:09:43|job|x' | " + slurmclitest.ToSep(10) + "\n"
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	r := &Runner{Paths: map[string]string{"squeue": script}, Timeout: 10 * time.Second}
	jobs, err := QueryNodeJobs(context.Background(), r, []string{"node1", "node2"}, FormatAuto, true)
	if err != nil || len(jobs) != 1 || jobs[0].ID != "5" || jobs[0].Name != "job|x" {
		t.Fatalf("%v %+v", err, jobs)
	}
	args, _ := os.ReadFile(log)
	runs := strings.Split(strings.TrimSuffix(string(args), "\n"), "\n")
	if len(runs) != 2 || runs[0] != "--nodelist=node1,node2 --json" {
		t.Fatalf("runs:\n%s", args)
	}
	// The text run's separator is new and joins the fields.
	sep, _, _ := strings.Cut(strings.TrimPrefix(runs[1], "--nodelist=node1,node2 --noheader --array -o %A"), "%F")
	if !validSeparator(sep) || runs[1] != "--nodelist=node1,node2 --noheader --array -o "+nodeJobsFormat(sep) {
		t.Errorf("text run %q", runs[1])
	}
	if _, err := QueryNodeJobs(context.Background(), r, []string{"--all"}, FormatText, false); err == nil {
		t.Error("node name --all accepted")
	}
	if _, err := QueryNodeJobs(context.Background(), r, []string{"node1"}, FormatJSON, false); ErrorCause(err) != CauseExit {
		t.Errorf("json refused in json mode: %v (cause %q)", err, ErrorCause(err))
	}
}

func FuzzParseNodeJobsJSON(f *testing.F) {
	f.Add(smallSqueueJSON(f, "squeue-running.json", 3, 7))
	f.Add(smallSqueueJSON(f, "squeue-nodelist.json", 8, 9, 10))
	f.Add([]byte(`{"jobs":[{"job_id":{"set":true,"number":42},"step_id":{"sluid":"sDVNM87TZNTA00"},"array_job_id":{"set":true,"number":40},"array_task_id":{"set":true,"number":2}}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		jobs, err := ParseNodeJobsJSON(bytes.NewReader(b))
		if err == nil {
			checkNodeJobs(t, jobs)
		}
	})
}

func FuzzParseNodeJobsText(f *testing.F) {
	f.Add(withSep(readFixture(f, "squeue-nodelist-text.txt"), 10, testSep))
	f.Add(withSep([]byte("12|7|2|bob|1002|chemistry|normal|batch|2026-11-21T12:09:43|arr\n3|3|N/A|alice|1001|(null)|(null)|debug|N/A|a|b\n"), 10, testSep))
	// The attacks: a record of the old form in a name, a bare newline, a
	// job printed twice, a line with too few separators.
	f.Add([]byte(nodeLine("4243", "alice", "1001", "physics", "x\n4243|||victim|1002|chemistry|normal|p|2026-01-01T00:00:00|y")))
	f.Add([]byte(nodeLine("1", "a", "1", "x", "x\ny") + nodeLine("1", "b", "2", "y", "z") + "3" + testSep + "half\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		jobs, ref, err := ParseNodeJobsText(bytes.NewReader(b), time.UTC, testSep)
		if err == nil {
			checkNodeJobs(t, jobs)
			checkRefused(t, ref)
			seen := map[string]bool{}
			for _, j := range jobs {
				if seen[j.ID] {
					t.Fatalf("job %s twice", j.ID)
				}
				seen[j.ID] = true
			}
		}
	})
}

// checkRefused: every refusal says why.
func checkRefused(t *testing.T, ref Refused) {
	if ref.Records < 0 || (ref.Records > 0) != (ref.First != nil) {
		t.Fatalf("refused %+v", ref)
	}
}

func checkNodeJobs(t *testing.T, jobs []NodeJob) {
	for _, j := range jobs {
		if !isDigits(j.ID) || j.Account == "(null)" || j.QOS == "(null)" || j.SLUID != "" && !IsSLUID(j.SLUID) {
			t.Fatalf("%+v", j)
		}
		if (j.ArrayJobID == "") != (j.ArrayTaskID == "") {
			t.Fatalf("half an array id: %+v", j)
		}
	}
}

// Real captures of the node-metadata squeue from Slurm 22.05 (text and
// JSON of the same moment): the same running jobs, array tasks by their
// raw ids, a | in the job name, and the same start times.
func TestParseNodeJobsCaptures(t *testing.T) {
	text, ref, err := ParseNodeJobsText(bytes.NewReader(withSep(readFixture(t, "squeue-nodelist-text.txt"), 10, testSep)), time.UTC, testSep)
	if err != nil || ref.Records != 0 {
		t.Fatal(err, ref)
	}
	want := []NodeJob{
		{ID: "10", User: "bob", UID: 1002, Account: "chemistry", QOS: "normal", Partition: "batch", Name: "arr|x", ArrayJobID: "8", ArrayTaskID: "1", StartTime: 1795563387},
		{ID: "8", User: "bob", UID: 1002, Account: "chemistry", QOS: "normal", Partition: "batch", Name: "arr|x", ArrayJobID: "8", ArrayTaskID: "2", StartTime: 1795563387},
		{ID: "9", User: "alice", UID: 1001, Account: "physics", QOS: "normal", Partition: "debug", Name: "plain", StartTime: 1795563387},
	}
	if len(text) != len(want) {
		t.Fatalf("text: %d jobs, want %d", len(text), len(want))
	}
	for i := range want {
		if text[i] != want[i] {
			t.Errorf("text job %d:\n got %+v\nwant %+v", i, text[i], want[i])
		}
	}
	js, err := ParseNodeJobsJSON(openFixture(t, "squeue-nodelist.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(js) != 10 {
		t.Errorf("json: %d jobs: 22.05 lists every job it holds", len(js))
	}
	by := map[string]NodeJob{}
	for _, j := range js {
		by[j.ID] = j
	}
	for _, w := range want {
		w.Cluster = "e2e"
		if by[w.ID] != w {
			t.Errorf("json job %s:\n got %+v\nwant %+v", w.ID, by[w.ID], w)
		}
	}
}
