// SPDX-License-Identifier: Apache-2.0

package slurmcli

import (
	"strings"
	"testing"
	"time"
)

func TestParseCommentRecords(t *testing.T) {
	sep := NewSeparator()
	line := func(id, comment string) string {
		return strings.Join([]string{id, "carol", "physics", "c1", "COMPLETED", "2026-01-02T03:04:05",
			"2026-01-02T03:05:05", "60", "2", "billing=2,cpu=2,mem=100M,node=1", "1", "n1", comment}, sep)
	}
	in := line("10", "JS1:H4sI") + "\n" + line("11", "") + "\n" + line("12", "two\nlines") + "\n" +
		line("13", "x") + "\n" + line("13", "y") + "\n" + "10" + sep + "forged\n"
	recs, ref, err := ParseCommentRecords(strings.NewReader(in), time.UTC, sep)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, r := range recs {
		got[r.ID] = r.AdminComment
	}
	if len(recs) != 3 || got["10"] != "JS1:H4sI" || got["11"] != "" || got["12"] != "two\nlines" {
		t.Fatalf("records %q", got)
	}
	if ref.Records != 3 { // both 13s, the forged line
		t.Fatalf("refused %d, want 3 (%v)", ref.Records, ref.First)
	}
	if recs[0].AllocCPUs != 2 || recs[0].AllocTRES.MemoryBytes != 100<<20 || recs[0].Elapsed != time.Minute {
		t.Fatalf("fields %+v", recs[0].SacctRecord)
	}
}

func TestSacctCommentArgs(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)
	a, err := SacctCommentArgs(CommentQuery{Since: now.Add(-time.Hour), Until: now}, "|0123456789abcdef|", time.UTC)
	if err != nil || !strings.Contains(strings.Join(a, " "), "-S 2026-01-02T02:00:00 -E 2026-01-02T03:00:00") {
		t.Fatalf("%q %v", a, err)
	}
	for _, q := range []CommentQuery{{JobID: "-x"}, {}, {JobID: "1", Cluster: "-M"}} {
		if _, err := SacctCommentArgs(q, "|0123456789abcdef|", time.UTC); err == nil {
			t.Errorf("%+v accepted", q)
		}
	}
}

func FuzzParseCommentRecords(f *testing.F) {
	const sep = "|0123456789abcdef|"
	f.Add(strings.Join([]string{"10", "u", "a", "c", "COMPLETED", "2026-01-02T03:04:05", "2026-01-02T03:05:05", "60",
		"2", "cpu=2", "1", "n1", "JS1:x"}, sep) + "\n")
	f.Fuzz(func(t *testing.T, in string) {
		recs, _, err := ParseCommentRecords(strings.NewReader(in), time.UTC, sep)
		if err != nil {
			return
		}
		for _, r := range recs {
			if !validJobID(r.ID) || len(r.AdminComment) > maxRecordBytes {
				t.Fatalf("record %q with a %d-byte comment", r.ID, len(r.AdminComment))
			}
		}
	})
}
