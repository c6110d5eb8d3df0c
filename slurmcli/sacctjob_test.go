// SPDX-License-Identifier: Apache-2.0

package slurmcli

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jobscope/jobscope/slurmcli/slurmclitest"
)

// captureHeader is the --format of the sacct captures (their timings file
// has the command); the captures were taken with -n.
const captureHeader = "JobID|JobIDRaw|JobName|User|UID|Group|Account|Partition|QOS|State|ExitCode|DerivedExitCode|" +
	"Submit|Start|End|Elapsed|ElapsedRaw|Timelimit|TimelimitRaw|NCPUS|NNodes|NodeList|ReqCPUS|ReqMem|ReqTRES|" +
	"AllocTRES|TRESUsageInTot|TRESUsageInMax|MaxRSS|AveRSS|MaxVMSize|TotalCPU|CPUTime|CPUTimeRAW|UserCPU|" +
	"SystemCPU|MaxDiskRead|MaxDiskWrite|Priority|Reason|WorkDir|Cluster\n"

func TestParseSacctRecordsRealCapture(t *testing.T) {
	// Taken with '|' and the job name third; no name there holds '|'.
	in := withSep(append([]byte(captureHeader), readFixture(t, "sacct-steps-after.txt")...), 42, testSep)
	recs, ref, err := ParseSacctRecords(bytes.NewReader(in), time.UTC, testSep)
	if err != nil || ref.Records != 0 {
		t.Fatal(err, ref)
	}
	byID := map[string]SacctRecord{}
	for _, r := range recs {
		byID[r.ID] = r
	}
	burn := byID["2"]
	if burn.User != "alice" || burn.Account != "physics" || burn.State != "COMPLETED" || burn.Cluster != "testcluster" {
		t.Errorf("job 2: %+v", burn)
	}
	if want := 65*time.Second + 416*time.Millisecond; burn.TotalCPU != want {
		t.Errorf("job 2 TotalCPU %v, want %v", burn.TotalCPU, want)
	}
	if burn.Elapsed != 90*time.Second || burn.TimeLimit != 10*time.Minute || burn.CPUTimeRaw != 90 {
		t.Errorf("job 2 elapsed %v limit %v cputime %v", burn.Elapsed, burn.TimeLimit, burn.CPUTimeRaw)
	}
	if !burn.Start.Equal(time.Date(2026, 11, 21, 12, 9, 43, 0, time.UTC)) || burn.Running() {
		t.Errorf("job 2 start %v running %v", burn.Start, burn.Running())
	}
	if burn.AllocTRES.CPUs != 1 || burn.AllocTRES.MemoryBytes != 256<<20 || burn.NodeList != "vm" {
		t.Errorf("job 2 TRES %+v nodes %q", burn.AllocTRES, burn.NodeList)
	}
	if byID["5"].State != "OUT_OF_MEMORY" || byID["11"].State != "CANCELLED" {
		t.Errorf("states: 5=%q 11=%q", byID["5"].State, byID["11"].State)
	}
	// Pending: no start, no end.
	if p := byID["8"]; !p.Start.IsZero() || !p.End.IsZero() || p.Running() {
		t.Errorf("pending job 8: %+v", p)
	}
}

func TestParseSlurmDuration(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"01:05.416":   65*time.Second + 416*time.Millisecond,
		"00:00:00":    0,
		"1-02:03:04":  26*time.Hour + 3*time.Minute + 4*time.Second,
		"10:00:00":    10 * time.Hour,
		"00:00.003":   3 * time.Millisecond,
		"2-00:00:00":  48 * time.Hour,
		"12:34:56.5":  12*time.Hour + 34*time.Minute + 56*time.Second + 500*time.Millisecond,
		"100-0:00:00": 2400 * time.Hour,
	} {
		got, err := ParseSlurmDuration(in)
		if err != nil || got != want {
			t.Errorf("ParseSlurmDuration(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "5", "a:b", "1:2:3:4", "-1:00", "00:99", "x-00:00:00"} {
		if _, err := ParseSlurmDuration(bad); err == nil {
			t.Errorf("ParseSlurmDuration(%q) accepted", bad)
		}
	}
}

func TestSacctRecordsRunsSacct(t *testing.T) {
	b := slurmclitest.New(t)
	b.Script("sacct", slurmclitest.FindSep+"\nprintf 'JobIDRaw|State|Start|End|Cluster\\n42|RUNNING|2026-01-02T03:04:05|Unknown|c1\\n' | "+slurmclitest.ToSep(5))
	r := &Runner{BinDir: b.Dir}
	recs, err := SacctRecords(context.Background(), r, "42", "c1", time.UTC)
	if err != nil || len(recs) != 1 || !recs[0].Running() || recs[0].Cluster != "c1" {
		t.Fatalf("records %+v, err %v", recs, err)
	}
	if args := strings.Join(b.Runs("sacct"), "\n"); !strings.Contains(args, "-j 42") || !strings.Contains(args, "-M c1") || !strings.Contains(args, "-D") ||
		!strings.Contains(args, "-P --delimiter=|") {
		t.Errorf("sacct ran with %q", args)
	}
	for _, bad := range []string{"42;rm", "", "-j"} {
		if _, err := SacctRecords(context.Background(), r, bad, "", time.UTC); err == nil {
			t.Errorf("job id %q accepted", bad)
		}
	}
	if _, err := SacctRecords(context.Background(), r, "42", "a,b", time.UTC); err == nil {
		t.Error("cluster list accepted")
	}
}

func FuzzParseSacctRecords(f *testing.F) {
	for _, n := range []string{"sacct-X-running.txt", "sacct-steps-after.txt"} {
		f.Add(withSep(append([]byte(captureHeader), readFixture(f, n)...), 42, testSep))
	}
	// The attacks: sacct fields in a name, a newline in a step's name, a
	// job printed twice.
	f.Add([]byte(sacctHeader + sacctLine("42", "alice", "COMPLETED", "9", "a|victim|chem|p|c1|TIMEOUT") +
		sacctLine("42.0", "", "COMPLETED", "", "s\n43|x") + sacctLine("44", "b", "FAILED", "1", "x") + sacctLine("44", "c", "FAILED", "1", "y")))
	f.Fuzz(func(t *testing.T, b []byte) {
		recs, ref, err := ParseSacctRecords(bytes.NewReader(b), time.UTC, testSep)
		if err != nil {
			return
		}
		checkRefused(t, ref)
		for _, r := range recs {
			if r.Elapsed < 0 || r.TotalCPU < 0 || r.CPUTimeRaw < 0 || strings.Contains(r.State, " ") {
				t.Fatalf("record %+v", r)
			}
		}
	})
}
