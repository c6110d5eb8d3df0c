// SPDX-License-Identifier: Apache-2.0

package slurmcli

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"
)

// Each parser is fuzzed from the real 22.05 captures: no input may panic,
// and parsed values must stay usable as metric values.

func seed(f *testing.F, names ...string) {
	for _, n := range names {
		f.Add(readFixture(f, n))
	}
}

// smallSqueueJSON keeps a few real jobs of a capture (running, with a
// GPU, an unsplit array, ended): whole 40 KiB captures slow the
// coverage-guided fuzzer to a crawl.
func smallSqueueJSON(f *testing.F, name string, ids ...float64) []byte {
	var in map[string]any
	if err := json.Unmarshal(readFixture(f, name), &in); err != nil {
		f.Fatal(err)
	}
	var keep []any
	for _, j := range in["jobs"].([]any) {
		for _, id := range ids {
			if j.(map[string]any)["job_id"] == id {
				keep = append(keep, j)
			}
		}
	}
	in["jobs"] = keep
	out, err := json.Marshal(in)
	if err != nil {
		f.Fatal(err)
	}
	return out
}

func FuzzParseSqueueJSON(f *testing.F) {
	f.Add(smallSqueueJSON(f, "squeue-running.json", 3, 7))
	f.Add(smallSqueueJSON(f, "squeue-after.json", 1, 8))
	f.Add(smallSqueueJSON(f, "squeue-busy.json", 7, 8, 10, 11))
	f.Add(smallSqueueJSON(f, "../24.11/squeue-running.json", 11, 13, 18))
	f.Add([]byte(`{"jobs":[{"job_id":{"set":true,"number":1},"job_state":["PENDING"],"array_task_string":"1-9:2%3"}]}`))
	fuzzParse(f, ParseSqueueJSON, checkJobs)
}

func FuzzParseSqueueText(f *testing.F) {
	f.Add(withSep(readFixture(f, "squeue-O-busy.txt"), len(squeueTextFields), testSep))
	f.Add(readFixture(f, "squeue-r-running.txt"))
	rec := func(id, name string) string {
		return strings.Join([]string{id, id, "N/A", "N/A", "PENDING", "None", "p", "alice", "1001", "physics", "normal", "1", "1",
			"N/A", "cpu=1", "2026-01-01T00:00:00", "N/A", name}, testSep) + "\n"
	}
	// The attacks: a bare newline in a name, a job printed twice.
	f.Add([]byte(rec("1", "x\ny") + rec("2", "z") + rec("2", "w")))
	f.Fuzz(func(t *testing.T, b []byte) {
		jobs, ref, err := ParseSqueueText(bytes.NewReader(b), testSep)
		if err != nil {
			return
		}
		checkJobs(t, jobs)
		checkRefused(t, ref)
		seen := map[string]bool{}
		for _, j := range jobs {
			if seen[j.ID] {
				t.Fatalf("job %q twice", j.ID)
			}
			seen[j.ID] = true
		}
	})
}

// fuzzParse feeds fuzzed input to parse and checks what parses.
func fuzzParse[T any](f *testing.F, parse func(io.Reader) (T, error), check func(*testing.T, T)) {
	f.Fuzz(func(t *testing.T, b []byte) {
		if v, err := parse(bytes.NewReader(b)); err == nil {
			check(t, v)
		}
	})
}

func checkJobs(t *testing.T, jobs []Job) {
	for _, j := range jobs {
		if j.Count < 1 {
			t.Fatalf("job %q counts %d", j.ID, j.Count)
		}
	}
}

func FuzzParseSinfoJSON(f *testing.F) {
	seed(f, "sinfo-running.json", "sinfo-busy.json", "../24.11/sinfo-running.json")
	fuzzParse(f, ParseSinfoJSON, checkNodes)
}

func FuzzParseScontrolNodes(f *testing.F) {
	seed(f, "scontrol-show-node-o-running.txt", "scontrol-show-node-o-busy.txt", "../24.11/scontrol-show-node-o-running.txt")
	fuzzParse(f, ParseScontrolNodes, checkNodes)
}

func checkNodes(t *testing.T, nodes []Node) {
	for _, n := range nodes {
		if n.State == "" {
			t.Fatalf("node %q without state", n.Name)
		}
		if n.IdleCPUs() < 0 || n.OtherCPUs() < 0 {
			t.Fatalf("node %q: negative CPUs", n.Name)
		}
	}
}

func FuzzParseScontrolRecords(f *testing.F) {
	// Single real lines: whole 12 KiB captures slow the fuzzer down.
	for _, name := range []string{"scontrol-show-job-o-running.txt", "scontrol-show-job-o-after.txt"} {
		lines := bytes.Split(readFixture(f, name), []byte("\n"))
		for _, i := range []int{1, 2, 6} {
			if i < len(lines) {
				f.Add(lines[i])
			}
		}
	}
	seed(f, "scontrol-show-node-o-running.txt")
	f.Fuzz(func(t *testing.T, b []byte) {
		recs, err := ParseScontrolRecords(bytes.NewReader(b))
		if err != nil {
			return
		}
		for _, r := range recs {
			for k := range r {
				if k == "" || strings.ContainsAny(k, "= \t") {
					t.Fatalf("bad key %q", k)
				}
			}
		}
	})
}

func FuzzParseSshare(f *testing.F) {
	seed(f, "sshare-running.txt", "sshare-after.txt")
	f.Fuzz(func(t *testing.T, b []byte) {
		shares, err := ParseSshare(bytes.NewReader(b))
		if err != nil {
			return
		}
		for _, s := range shares {
			if s.Account == "" || s.Depth < 0 {
				t.Fatalf("share %+v", s)
			}
		}
	})
}

func FuzzParseSdiag(f *testing.F) {
	seed(f, "sdiag-running.txt", "sdiag-after.txt", "sdiag-json-running.txt")
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := ParseSdiag(bytes.NewReader(b))
		if err == nil && d == nil {
			t.Fatal("nil diag without error")
		}
	})
}

func FuzzUnits(f *testing.F) {
	f.Add("cpu=2,mem=20489M,billing=2,gres/gpu=2", "gres:gpu:a100:2(S:0-1)", "1-3,7,10-20:5%4", "600M")
	f.Fuzz(func(t *testing.T, tres, gres, array, mem string) {
		ParseTRES(tres)
		GresGPUs(gres)
		ParseMemory(mem)
		if n := ArrayTaskCount(array); n < 1 {
			t.Fatalf("ArrayTaskCount(%q) = %d", array, n)
		}
	})
}

func FuzzParseSacct(f *testing.F) {
	for _, n := range []string{"sacct-X-running.txt", "sacct-X-after.txt"} {
		// The captures' -P rows, under the header jobscope's query prints.
		f.Add(append([]byte("JobID|JobIDRaw|JobName|User|UID|Group|Account|Partition|QOS|State|ExitCode|DerivedExitCode|Submit|Start|End\n"),
			readFixture(f, n)...))
	}
	seed(f, "sacct-X-busy.txt", "../24.11/sacct-X-after.txt")
	f.Add([]byte("JobID|JobIDRaw|State|Partition|Account|Submit|End\n8_[2-3]|8|CANCELLED by 0|b|a|2026-11-24T10:00:00|2026-11-24T10:05:00\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		jobs, err := ParseSacct(bytes.NewReader(b))
		if err != nil {
			return
		}
		for _, j := range jobs {
			if strings.Contains(j.State, " ") || j.Count < 1 {
				t.Fatalf("state %q count %d", j.State, j.Count)
			}
		}
	})
}
