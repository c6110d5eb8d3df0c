// SPDX-License-Identifier: Apache-2.0

package slurmcli

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// testSep stands for a run's separator in tests.
const testSep = "|0123456789abcdef|"

// withSep turns a capture taken with '|' between n fields into what the
// same run prints with sep: the first n-1 '|' of each line become sep (the
// last field is the job name, which may hold '|').
func withSep(b []byte, n int, sep string) []byte {
	lines := strings.Split(string(b), "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = strings.Replace(l, "|", sep, n-1)
		}
	}
	return []byte(strings.Join(lines, "\n"))
}

func TestNewSeparator(t *testing.T) {
	a, b := NewSeparator(), NewSeparator()
	if a == b || !validSeparator(a) || len(a) != 18 {
		t.Errorf("separators %q, %q", a, b)
	}
	// squeue -O reads a size right after "Name:" with strtol: the
	// separator must not begin like a number.
	if c := a[0]; c >= '0' && c <= '9' || c == ' ' || c == '+' || c == '-' || c == '.' {
		t.Errorf("separator %q starts like a number", a)
	}
	for _, bad := range []string{"", "|", "|abc|", "0123456789abcdef", "|0123 56789|", "|01%3456789|", "|01,3456789|"} {
		if validSeparator(bad) {
			t.Errorf("separator %q accepted", bad)
		}
	}
}

// nodeLine is one record of the node squeue text form.
func nodeLine(id, user, uid, account, name string) string {
	return strings.Join([]string{id, "", "", user, uid, account, "normal", "p", "2026-01-01T00:00:00", name}, testSep) + "\n"
}

// A job name holding a newline and a whole record of the old '|' form
// forges nothing: the line is the name going on.
func TestNodeJobsNewlineNameForgesNothing(t *testing.T) {
	name := "x\n4243|||victim|1002|chemistry|normal|p|2026-01-01T00:00:00|y"
	out := nodeLine("4243", "alice", "1001", "physics", name)
	jobs, ref, err := ParseNodeJobsText(strings.NewReader(out), time.UTC, testSep)
	if err != nil || ref.Records != 0 {
		t.Fatalf("err %v, refused %+v", err, ref)
	}
	if len(jobs) != 1 || jobs[0].User != "alice" || jobs[0].UID != 1001 || jobs[0].Account != "physics" || jobs[0].Name != name {
		t.Errorf("jobs %+v", jobs)
	}
}

// A bare newline in one job's name costs nothing: both jobs are read, the
// name whole.
func TestNodeJobsNewlineNameKeepsOthers(t *testing.T) {
	out := nodeLine("4243", "alice", "1001", "physics", "x\ny") + nodeLine("4244", "bob", "1003", "bio", "z")
	jobs, ref, err := ParseNodeJobsText(strings.NewReader(out), time.UTC, testSep)
	if err != nil || ref.Records != 0 || len(jobs) != 2 {
		t.Fatalf("jobs %+v, refused %+v, err %v", jobs, ref, err)
	}
	if jobs[0].Name != "x\ny" || jobs[1].ID != "4244" || jobs[1].User != "bob" {
		t.Errorf("jobs %+v", jobs)
	}
}

// A second record of a job (a name that guessed the separator) is refused
// with the first: neither can be told to be Slurm's.
func TestNodeJobsDuplicateIDRefused(t *testing.T) {
	out := nodeLine("4243", "alice", "1001", "physics", "x") + nodeLine("4243", "victim", "1002", "chemistry", "y") +
		nodeLine("4244", "bob", "1003", "bio", "z")
	jobs, ref, err := ParseNodeJobsText(strings.NewReader(out), time.UTC, testSep)
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 1 || jobs[0].ID != "4244" || ref.Records != 2 || !strings.Contains(ref.First.Error(), "4243") {
		t.Errorf("jobs %+v, refused %+v", jobs, ref)
	}
}

// A malformed line costs its own record, never the answer.
func TestNodeJobsBadLineCostsOneRecord(t *testing.T) {
	out := nodeLine("1", "a", "1", "x", "n1") +
		nodeLine("2", "b", "2", "y", "n2"+testSep+"extra") + // a separator too many
		"3" + testSep + "half\n" + // too few
		"go on\n" + // continues the bad record, not the next
		nodeLine("abc", "c", "3", "z", "n3") + // no job id
		nodeLine("4", "d", "4", "w", "n4")
	jobs, ref, err := ParseNodeJobsText(strings.NewReader(out), time.UTC, testSep)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, j := range jobs {
		ids = append(ids, j.ID+":"+j.Name)
	}
	if got := strings.Join(ids, ","); got != "1:n1,4:n4" || ref.Records != 3 {
		t.Errorf("jobs %s, refused %+v", got, ref)
	}
}

// A name of any length costs at most maxRecordBytes, and its record only.
func TestNodeJobsLongNameBounded(t *testing.T) {
	long := strings.Repeat("x", 2*maxRecordBytes)
	for _, name := range []string{long, "a\n" + long, strings.Repeat("y\n", maxRecordBytes)} {
		out := nodeLine("1", "a", "1", "x", name) + nodeLine("2", "b", "2", "y", "ok")
		jobs, ref, err := ParseNodeJobsText(strings.NewReader(out), time.UTC, testSep)
		if err != nil || len(jobs) != 1 || jobs[0].ID != "2" || ref.Records != 1 {
			t.Errorf("name of %d bytes: jobs %d, refused %+v, err %v", len(name), len(jobs), ref, err)
		}
	}
}

// The controller's squeue text: a bare newline in a name fails nothing,
// and a forged second record of a job refuses both.
func TestSqueueTextNewlineName(t *testing.T) {
	rec := func(id, user, name string) string {
		return strings.Join([]string{id, id, "N/A", "N/A", "PENDING", "None", "p", user, "1001", "physics", "normal", "1", "1",
			"N/A", "cpu=1", "2026-01-01T00:00:00", "N/A", name}, testSep) + "\n"
	}
	jobs, ref, err := ParseSqueueTextIn(strings.NewReader(rec("1", "alice", "x\ny")+rec("2", "bob", "z")), time.UTC, testSep)
	if err != nil || ref.Records != 0 || len(jobs) != 2 || jobs[1].User != "bob" {
		t.Fatalf("jobs %+v, refused %+v, err %v", jobs, ref, err)
	}
	// The old '|' form of a record inside a name is only text.
	name := "x\n1|1|N/A|N/A|RUNNING|None|p|victim|1002|chem|normal|64|1|N/A|cpu=64|2026-01-01T00:00:00|N/A|y"
	jobs, ref, err = ParseSqueueTextIn(strings.NewReader(rec("1", "alice", name)), time.UTC, testSep)
	if err != nil || ref.Records != 0 || len(jobs) != 1 || jobs[0].User != "alice" || jobs[0].State != "PENDING" || jobs[0].CPUs != 1 {
		t.Errorf("jobs %+v, refused %+v, err %v", jobs, ref, err)
	}
	jobs, ref, _ = ParseSqueueTextIn(strings.NewReader(rec("1", "alice", "x")+rec("1", "victim", "y")), time.UTC, testSep)
	if len(jobs) != 0 || ref.Records != 2 {
		t.Errorf("duplicate: jobs %+v, refused %+v", jobs, ref)
	}
}

// sacctHeader is SacctRecordFormat's header with testSep.
var sacctHeader = strings.ReplaceAll(SacctRecordFormat, ",", testSep) + "\n"

func sacctLine(id, user, state, limit, name string) string {
	return strings.Join([]string{id, user, "physics", "p", "c1", state, "0:0", "2026-01-01T00:00:00", "2026-01-01T00:00:00",
		"2026-01-01T00:10:00", "600", limit, "1", "", "1", "n1", "00:01", "600", name}, testSep) + "\n"
}

// A job name full of '|' and whole sacct fields forges none of them.
func TestSacctRecordsPipeNameForgesNothing(t *testing.T) {
	name := "a|victim|chem|p|c1|TIMEOUT|0:0|2026-01-01T00:00:00|2026-01-01T00:00:00|2026-01-01T02:00:00|7200|60"
	in := sacctHeader + sacctLine("42", "alice", "COMPLETED", "9999", name) +
		sacctLine("42.0", "", "COMPLETED", "", "step\n43|bob|x")
	recs, ref, err := ParseSacctRecords(strings.NewReader(in), time.UTC, testSep)
	if err != nil || ref.Records != 0 || len(recs) != 1 {
		t.Fatalf("records %+v, refused %+v, err %v", recs, ref, err)
	}
	r := recs[0]
	if r.Name != name || r.User != "alice" || r.State != "COMPLETED" || r.TimeLimit != 9999*time.Minute || r.Account != "physics" ||
		!r.End.Equal(time.Date(2026, 1, 1, 0, 10, 0, 0, time.UTC)) {
		t.Errorf("record %+v", r)
	}
	// The same job twice (same id, same submit time) is refused whole.
	recs, ref, _ = ParseSacctRecords(strings.NewReader(sacctHeader+sacctLine("42", "alice", "COMPLETED", "9", "a")+
		sacctLine("42", "victim", "FAILED", "9", "b")), time.UTC, testSep)
	if len(recs) != 0 || ref.Records != 2 {
		t.Errorf("duplicate: records %+v, refused %+v", recs, ref)
	}
}

// The refused records are counted by the runner as cause=record and
// returned as a partial answer.
func TestRefusedCounted(t *testing.T) {
	r := &Runner{}
	if err := r.refused("squeue", Refused{}); err != nil {
		t.Fatal(err)
	}
	err := r.refused("squeue", Refused{Records: 2, First: errors.New("x")})
	if !Partial(err) || ErrorCause(err) != CauseRecord || !Partial(fmt.Errorf("w: %w", err)) {
		t.Fatalf("%v", err)
	}
	_ = r.refused("squeue", Refused{Records: 1, First: errors.New("y")})
	if _, st := r.Stats().Snapshot(); st["squeue"].Errors[CauseRecord] != 3 {
		t.Errorf("stats %+v", st)
	}
	if Partial(ErrParse) || Partial(nil) {
		t.Error("other errors are not partial")
	}
}

func TestSplitRecordsReadsAll(t *testing.T) {
	var got []string
	in := "\n" + strings.Join([]string{"a", "b", "c\nd"}, testSep) + "\n\n" + strings.Join([]string{"e", "f", ""}, testSep)
	ref, err := splitRecords(bytes.NewReader([]byte(in)), testSep, 3, func(line int, f []string) error {
		got = append(got, fmt.Sprintf("%d:%q", line, f))
		return nil
	})
	// The blank line after "c\nd" belongs to that name (it ended in a
	// newline); the one before the first record is nothing.
	want := `2:["a" "b" "c\nd\n"],5:["e" "f" ""]`
	if err != nil || ref.Records != 0 || strings.Join(got, ",") != want {
		t.Errorf("got %s, refused %+v, err %v; want %s", strings.Join(got, ","), ref, err, want)
	}
	if _, err := splitRecords(strings.NewReader("x"), "|", 2, nil); err == nil {
		t.Error("short separator accepted")
	}
}

// A name of many short lines costs time in proportion to its length, not
// to its square: the whole record's bytes are copied a bounded number of
// times (measured by allocation, not by the clock).
func TestManyLineNameLinear(t *testing.T) {
	name := strings.Repeat("\n", maxRecordBytes/2-1)
	in := []byte(nodeLine("1", "a", "1", "x", name))
	allocs := testing.AllocsPerRun(3, func() {
		jobs, ref, err := ParseNodeJobsText(bytes.NewReader(in), time.UTC, testSep)
		if err != nil || len(jobs) != 1 || ref.Records != 0 || len(jobs[0].Name) != len(name) {
			t.Fatalf("jobs %d, refused %+v, err %v", len(jobs), ref, err)
		}
	})
	// Appending to the string line by line made one allocation per line
	// (32 Ki); gathering the lines needs a few dozen at most.
	if allocs > 1000 {
		t.Errorf("%v allocations for one name of %d lines", allocs, len(name))
	}
}

// Output of another form altogether (garbage, a changed format) fails the
// answer: no line has the fields asked for. A user's record, however long
// its name, always has them.
func TestSplitRecordsForeignOutput(t *testing.T) {
	for _, in := range []string{"squeue: warning\nmore\n", "1|2|3|4|5|6|7|8|9|10\n", "x" + testSep + "y\n"} {
		if jobs, ref, err := ParseNodeJobsText(strings.NewReader(in), time.UTC, testSep); err == nil {
			t.Errorf("%q: jobs %+v, refused %+v, no error", in, jobs, ref)
		}
	}
	long := nodeLine("1", "a", "1", "x", strings.Repeat("n", 2*maxRecordBytes))
	if jobs, ref, err := ParseNodeJobsText(strings.NewReader(long), time.UTC, testSep); err != nil || len(jobs) != 0 || ref.Records != 1 {
		t.Errorf("one job with a long name: jobs %+v, refused %+v, err %v", jobs, ref, err)
	}
	if jobs, ref, err := ParseNodeJobsText(strings.NewReader(""), time.UTC, testSep); err != nil || len(jobs) != 0 || ref.Records != 0 {
		t.Errorf("no job: jobs %+v, refused %+v, err %v", jobs, ref, err)
	}
}
