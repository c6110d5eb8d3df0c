// SPDX-License-Identifier: Apache-2.0

package slurmcli

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// fixtures are real Slurm 22.05.8 outputs (see testdata/slurm/README.md).
var fixtures = filepath.Join("..", "testdata", "slurm", "22.05")

func openFixture(t testing.TB, name string) *os.File {
	t.Helper()
	f, err := os.Open(filepath.Join(fixtures, name))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func readFixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(fixtures, name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// queueCounts sums Count by state over jobs still in the queue.
func queueCounts(jobs []Job) map[string]int {
	out := map[string]int{}
	for _, j := range jobs {
		if j.InQueue() {
			out[j.State] += j.Count
		}
	}
	return out
}

func TestParseSqueueJSONRunning(t *testing.T) {
	jobs, err := ParseSqueueJSON(openFixture(t, "squeue-running.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 11 {
		t.Fatalf("got %d records, want 11 (jobs 1-11, array 7 unsplit)", len(jobs))
	}
	// sdiag at the same moment: "Jobs pending: 9, Jobs running: 2"; jobs 1
	// (COMPLETED) and 11 (CANCELLED) are still listed by squeue --json.
	if got, want := queueCounts(jobs), map[string]int{"PENDING": 9, "RUNNING": 2}; !reflect.DeepEqual(got, want) {
		t.Errorf("queue counts %v, want %v", got, want)
	}
	byID := map[string]Job{}
	for _, j := range jobs {
		byID[j.ID] = j
	}
	j3 := byID["3"]
	if j3.State != "RUNNING" || j3.Partition != "batch" || j3.User != "bob" || j3.Account != "chemistry" ||
		j3.CPUs != 1 || j3.MemoryBytes != 600<<20 || j3.GPUs != 1 {
		t.Errorf("job 3: %+v", j3)
	}
	if j7 := byID["7"]; j7.Count != 3 || j7.Reason != "Priority" {
		t.Errorf("array job 7: %+v, want 3 pending tasks", j7)
	}
	if j8 := byID["8"]; j8.Reason != "JobHeldUser" || j8.MemoryBytes != 256<<20 {
		t.Errorf("job 8: %+v", j8)
	}
	if byID["1"].InQueue() || byID["11"].InQueue() {
		t.Error("completed/cancelled jobs counted as in the queue")
	}
}

func TestParseSqueueJSONAfter(t *testing.T) {
	jobs, err := ParseSqueueJSON(openFixture(t, "squeue-after.json"))
	if err != nil {
		t.Fatal(err)
	}
	// Only 8 and 10 are still pending; every other job has ended.
	if got, want := queueCounts(jobs), map[string]int{"PENDING": 2}; !reflect.DeepEqual(got, want) {
		t.Errorf("queue counts %v, want %v", got, want)
	}
}

func TestParseSqueueText(t *testing.T) {
	jobs, ref, err := ParseSqueueText(bytes.NewReader(withSep(readFixture(t, "squeue-O-busy.txt"), len(squeueTextFields), testSep)), testSep)
	if err != nil || ref.Records != 0 {
		t.Fatal(err, ref)
	}
	if len(jobs) != 11 {
		t.Fatalf("got %d lines, want 11 (array 11 split by -r)", len(jobs))
	}
	if got, want := queueCounts(jobs), map[string]int{"PENDING": 6, "RUNNING": 5}; !reflect.DeepEqual(got, want) {
		t.Errorf("queue counts %v, want %v", got, want)
	}
	for _, j := range jobs {
		switch j.ID {
		case "6":
			if j.GPUs != 1 || j.MemoryBytes != 100<<20 || j.Account != "chemistry" || !j.Allocated {
				t.Errorf("job 6: %+v", j)
			}
		case "9": // the description squeue prints for the reason code
			if j.Reason != "Resources" {
				t.Errorf("job 9 reason %q, want Resources", j.Reason)
			}
		case "10": // no --mem: tres-alloc has Slurm's default (the node's memory)
			if j.MemoryBytes != 24105<<20 {
				t.Errorf("job 10 memory %v, want 24105 MiB", j.MemoryBytes)
			}
		case "11_2":
			if j.RawID != "11" || j.ArrayJobID != "11" || j.ArrayTask != "2" {
				t.Errorf("array task: %+v", j)
			}
		}
	}
}

func TestParseSqueueTextPipeInName(t *testing.T) {
	line := "42|42|42|N/A|RUNNING|None|debug|alice|1001|physics|normal|4|2|gres:gpu:2|cpu=4,mem=2G,node=2,billing=4,gres/gpu=4|2026-11-21T12:09:43|2026-11-21T12:09:44|a|b|c\n"
	jobs, ref, err := ParseSqueueTextIn(bytes.NewReader(withSep([]byte(line), len(squeueTextFields), testSep)), time.UTC, testSep)
	if err != nil || ref.Records != 0 {
		t.Fatal(err, ref)
	}
	want := Job{ID: "42", State: "RUNNING", Reason: "None", Partition: "debug", User: "alice", Account: "physics", QOS: "normal",
		Count: 1, RawID: "42", Submit: time.Date(2026, 11, 21, 12, 9, 43, 0, time.UTC), Start: time.Date(2026, 11, 21, 12, 9, 44, 0, time.UTC),
		Allocated: true, CPUs: 4, MemoryBytes: 2 << 30, GPUs: 4}
	if len(jobs) != 1 || jobs[0] != want {
		t.Errorf("got %+v, want %+v", jobs, want)
	}
}

func TestParseSqueueJSONNewerShapes(t *testing.T) {
	// 23.02+ prints states as lists and numbers as {set, infinite, number}.
	in := `{"jobs":[{"job_id":5,"job_state":["RUNNING"],"state_reason":"None","partition":"p","user_name":"u","account":"a",
	"cpus":{"set":true,"infinite":false,"number":8},"node_count":{"set":true,"infinite":false,"number":2},
	"tres_alloc_str":"cpu=8,mem=16G,node=2,billing=8,gres/gpu=4,gres/gpu:a100=4"}],"errors":[]}`
	jobs, err := ParseSqueueJSON(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	want := Job{ID: "5", State: "RUNNING", Reason: "None", Partition: "p", User: "u", Account: "a", Count: 1,
		RawID: "5", Allocated: true, CPUs: 8, MemoryBytes: 16 << 30, GPUs: 4}
	if len(jobs) != 1 || jobs[0] != want {
		t.Errorf("got %+v, want %+v", jobs, want)
	}
	if _, err := ParseSqueueJSON(strings.NewReader(`{"errors":[{"error":"Unable to contact slurm controller"}]}`)); err == nil ||
		!strings.Contains(err.Error(), "Unable to contact") {
		t.Errorf("error output: %v", err)
	}
}

func TestParseNodesJSONAndTextAgree(t *testing.T) {
	// 22.05's "nodes" list and 24.11's "sinfo" records against scontrol.
	for _, when := range []string{"running", "after", "busy", "../24.11/running", "../24.11/after", "../26.05/running", "../26.05/after"} {
		dir, w := filepath.Split(when)
		fromJSON, err := ParseSinfoJSON(openFixture(t, dir+"sinfo-"+w+".json"))
		if err != nil {
			t.Fatal(err)
		}
		fromText, err := ParseScontrolNodes(openFixture(t, dir+"scontrol-show-node-o-"+w+".txt"))
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(fromJSON, fromText) {
			t.Errorf("%s: sinfo --json %+v\nscontrol show node -o %+v", when, fromJSON, fromText)
		}
	}
	nodes, _ := ParseSinfoJSON(openFixture(t, "sinfo-running.json"))
	want := Node{Name: "vm", State: "allocated", Partitions: []string{"debug", "batch"}, CPUs: 2, AllocCPUs: 2, Available: true,
		RealMemoryBytes: 20489 << 20, AllocMemoryBytes: 856 << 20, FreeMemoryBytes: 22372 << 20, FreeMemoryKnown: true,
		GPUs: 2, AllocGPUs: 1, CPULoad: 1.94, CPULoadKnown: true, Weight: 1}
	if len(nodes) != 1 || !reflect.DeepEqual(nodes[0], want) {
		t.Errorf("running node %+v, want %+v", nodes, want)
	}
	// sinfo's own A/I/O/T at that moment: 2/0/0/2.
	if n := nodes[0]; n.IdleCPUs() != 0 || n.OtherCPUs() != 0 {
		t.Errorf("idle %v other %v", n.IdleCPUs(), n.OtherCPUs())
	}
}

func TestNodeState(t *testing.T) {
	for _, c := range []struct {
		base  string
		flags []string
		want  string
		avail bool
	}{
		{"ALLOCATED", nil, "allocated", true},
		{"mixed", nil, "mixed", true},
		{"IDLE", []string{"DRAIN"}, "drained", false},
		{"MIXED", []string{"DRAIN"}, "draining", false},
		{"DOWN", []string{"NOT_RESPONDING"}, "down", false},
		{"IDLE", []string{"POWERED_DOWN"}, "powered_down", true},
		{"IDLE", []string{"POWERING_UP"}, "powering_up", true},
		{"IDLE", []string{"MAINTENANCE", "RESERVED"}, "maint", false},
		{"IDLE", []string{"RESERVED"}, "reserved", true},
		{"IDLE", []string{"NOT_RESPONDING"}, "idle", false},
		{"idle*", nil, "idle", true},
		{"", nil, "unknown", false},
	} {
		got, avail := NodeState(c.base, c.flags)
		if got != c.want || avail != c.avail {
			t.Errorf("NodeState(%q, %v) = %q, %v; want %q, %v", c.base, c.flags, got, avail, c.want, c.avail)
		}
	}
}

func TestParseSshare(t *testing.T) {
	shares, err := ParseSshare(openFixture(t, "sshare-running.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if len(shares) != 8 {
		t.Fatalf("got %d rows, want 8", len(shares))
	}
	phys := shares[5]
	if phys.Account != "physics" || phys.User != "" || phys.Depth != 1 || phys.RawShares != 60 ||
		phys.NormShares != 0.594059 || !math.IsNaN(phys.FairShare) {
		t.Errorf("physics row: %+v", phys)
	}
	rr := shares[1]
	if rr.Account != "root" || rr.User != "root" || !math.IsInf(rr.LevelFS, 1) || rr.FairShare != 1 {
		t.Errorf("root/root row: %+v", rr)
	}
	if _, err := ParseSshare(openFixture(t, "squeue-r-running.txt")); err == nil {
		t.Error("squeue output accepted as sshare output")
	}
}

func TestParseSdiag(t *testing.T) {
	d, err := ParseSdiag(openFixture(t, "sdiag-running.txt"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		section, key string
		want         float64
	}{
		{DiagTop, "server thread count", 3},
		{DiagTop, "jobs submitted", 13},
		{DiagTop, "jobs pending", 9},
		{DiagTop, "data since", 1795262966},
		{DiagMain, "last cycle", 106},
		{DiagMain, "max cycle", 2976},
		{DiagMain, "total cycles", 4},
		{DiagBackfill, "total cycles", 1},
		{DiagBackfill, "last cycle when", 1795262995},
		{DiagBackfill, "last depth cycle", 7},
		{DiagBackfill, "total backfilled jobs (since last slurm start)", 0},
	} {
		if got, ok := d.Get(c.section, c.key); !ok || got != c.want {
			t.Errorf("%q/%q = %v, %v; want %v", c.section, c.key, got, ok, c.want)
		}
	}
	if len(d.RPCByType) != 21 || d.RPCByType[1] != (RPCStat{Name: "REQUEST_JOB_INFO", Count: 39, TotalMicros: 25134}) {
		t.Errorf("rpc by type: %d entries, second %+v", len(d.RPCByType), d.RPCByType[1])
	}
	if len(d.RPCByUser) != 4 || d.RPCByUser[3] != (RPCStat{Name: "bob", Count: 4, TotalMicros: 3097}) {
		t.Errorf("rpc by user: %+v", d.RPCByUser)
	}
	if len(d.PendingRPCs) != 0 {
		t.Errorf("pending: %+v", d.PendingRPCs)
	}
	if _, err := ParseSdiag(openFixture(t, "sdiag-json-running.txt")); err == nil {
		t.Error("sdiag's usage error accepted as statistics")
	}
}

func TestParseScontrolJobs(t *testing.T) {
	recs, err := ParseScontrolRecords(openFixture(t, "scontrol-show-job-o-running.txt"))
	if err != nil {
		t.Fatal(err)
	}
	var j2 map[string]string
	for _, r := range recs {
		if r["JobId"] == "2" {
			j2 = r
		}
	}
	for k, want := range map[string]string{"UserId": "alice(1001)", "Account": "physics", "Partition": "debug",
		"QOS": "normal", "JobName": "cpuburn", "JobState": "RUNNING", "TRES": "cpu=1,mem=256M,node=1,billing=1"} {
		if j2[k] != want {
			t.Errorf("job 2 %s = %q, want %q", k, j2[k], want)
		}
	}
	nodes, err := ParseScontrolRecords(openFixture(t, "scontrol-show-node-o-running.txt"))
	if err != nil || len(nodes) != 1 {
		t.Fatal(err, len(nodes))
	}
	if got := nodes[0]["OS"]; got != "Linux 6.18.44-fc-v669 #1 SMP PREEMPT_DYNAMIC @0" {
		t.Errorf("OS with spaces: %q", got)
	}
}

func TestParseKVLineFirstKeyWins(t *testing.T) {
	f := ParseKVLine("JobId=9 JobName=x Account=evil UserId=bob(1002) Account=real Comment=a b=c")
	if f["Account"] != "evil" && f["Account"] != "real" {
		t.Fatalf("fields %v", f)
	}
	// The first Account is the one kept; a repeat never overrides it.
	if f["Account"] != "evil" || f["UserId"] != "bob(1002)" {
		t.Errorf("fields %v", f)
	}
}

func TestUnits(t *testing.T) {
	for s, want := range map[string]int{"": 1, "1-3": 3, "1,4,7-9": 5, "0-15:4": 4, "1-100%5": 100, "junk": 1, "5-1": 1} {
		if got := ArrayTaskCount(s); got != want {
			t.Errorf("ArrayTaskCount(%q) = %d, want %d", s, got, want)
		}
	}
	for s, want := range map[string]float64{"600M": 600 << 20, "20489": 20489 << 20, "1G": 1 << 30, "512K": 512 << 10, "4000Mn": 4000 << 20, "2T": 2 << 40} {
		if got, err := ParseMemory(s); err != nil || got != want {
			t.Errorf("ParseMemory(%q) = %v, %v; want %v", s, got, err, want)
		}
	}
	for s, want := range map[string]float64{"gpu:2": 2, "gres:gpu:1": 1, "gres/gpu:a100:2(S:0-1)": 2, "gpu:a100": 1, "gpu:1,license:3": 1, "N/A": 0, "": 0} {
		if got := GresGPUs(s); got != want {
			t.Errorf("GresGPUs(%q) = %v, want %v", s, got, want)
		}
	}
	tr, err := ParseTRES("cpu=2,mem=20489M,billing=2,gres/gpu:a100=1,gres/gpu:v100=2")
	if err != nil || tr.CPUs != 2 || tr.MemoryBytes != 20489<<20 || tr.GPUs != 3 {
		t.Errorf("typed gpus: %+v %v", tr, err)
	}
}
