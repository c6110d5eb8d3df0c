// SPDX-License-Identifier: Apache-2.0

package slurmcli

import (
	"bytes"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
)

// The "busy" 22.05 captures were taken by test/e2e/run.sh with the node
// draining ("e2e: disk replaced, burn-in"), a maintenance reservation, a
// remote license pool, held jobs (one without --mem) and a held array; the
// 24.11 ones come from the trixie VM (a drained node2, two reservations,
// licenses matlab:4 and fluent:2). See testdata/slurm/README.md.

func TestParseReservations(t *testing.T) {
	for _, v := range []string{"24.11", "26.05"} {
		t.Run(v, func(t *testing.T) { testReservations(t, "../"+v+"/") })
	}
	busy, err := ParseReservationsText(openFixture(t, "scontrol-show-res-busy.txt"), time.UTC)
	if err != nil || len(busy) != 1 || busy[0].Name != "e2e_maint" || busy[0].CPUs != 2 || busy[0].Nodes != "vm" ||
		!busy[0].Start.Equal(time.Date(2026, 11, 25, 0, 43, 8, 0, time.UTC)) {
		t.Errorf("22.05 busy: %+v, %v", busy, err)
	}
	for _, none := range []string{"No reservations in the system\n", ""} {
		if r, err := ParseReservationsText(strings.NewReader(none), time.UTC); err != nil || len(r) != 0 {
			t.Errorf("%q: %v, %v", none, r, err)
		}
	}
	if _, err := ParseReservationsText(strings.NewReader("ReservationName=x StartTime=soon EndTime=later\n"), time.UTC); err == nil {
		t.Error("unreadable times accepted")
	}
}

// testReservations: a version's text and JSON give the same reservations.
func testReservations(t *testing.T, dir string) {
	text, err := ParseReservationsText(openFixture(t, dir+"scontrol-show-res-running.txt"), time.Local)
	if err != nil {
		t.Fatal(err)
	}
	js, err := ParseReservationsJSON(openFixture(t, dir+"scontrol-show-res-running.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(text) != 2 || len(js) != 2 {
		t.Fatalf("text %d, json %d reservations, want 2", len(text), len(js))
	}
	// JSON has no state: it follows from the times, as the text's does.
	captured := text[0].Start.Add(time.Minute)
	for i := range text {
		if text[i].ActiveAt(captured) != js[i].ActiveAt(captured) {
			t.Errorf("%s: active %v in text, %v from JSON", text[i].Name, text[i].ActiveAt(captured), js[i].ActiveAt(captured))
		}
		a, b := text[i], js[i]
		a.State, a.Start, a.End, b.Start, b.End = "", a.Start.UTC(), a.End.UTC(), b.Start.UTC(), b.End.UTC()
		if !reflect.DeepEqual(a, b) {
			t.Errorf("text %+v\njson %+v", a, b)
		}
	}
	want := Reservation{Name: "maint_window", State: "inactive", Nodes: "node[1-2]", NodeCount: 2, CoreCount: 8, CPUs: 8,
		Flags: []string{"MAINT", "IGNORE_JOBS", "SPEC_NODES", "ALL_NODES"}, Users: "root"}
	got := text[1]
	got.Start, got.End = time.Time{}, time.Time{}
	if !reflect.DeepEqual(got, want) || text[1].End.Sub(text[1].Start) != time.Hour {
		t.Errorf("maint_window %+v, want %+v", text[1], want)
	}
}

func TestParseLicenses(t *testing.T) {
	for _, when := range []string{"24.11/running", "24.11/after", "26.05/running", "26.05/after"} {
		v, w, _ := strings.Cut(when, "/")
		text, err := ParseLicensesText(openFixture(t, "../"+v+"/scontrol-show-lic-"+w+".txt"))
		if err != nil {
			t.Fatal(err)
		}
		js, err := ParseLicensesJSON(openFixture(t, "../"+v+"/scontrol-show-lic-"+w+".json"))
		if err != nil {
			t.Fatal(err)
		}
		// 26.05's JSON lists them in another order than its text.
		byName := func(l []License) { sort.Slice(l, func(i, j int) bool { return l[i].Name < l[j].Name }) }
		byName(text)
		byName(js)
		if !reflect.DeepEqual(text, js) || len(text) != 2 {
			t.Errorf("%s: text %+v, json %+v", when, text, js)
		}
	}
	text, _ := ParseLicensesText(openFixture(t, "../24.11/scontrol-show-lic-running.txt")) // text order: fluent, matlab
	if want := (License{Name: "fluent", Total: 2, Used: 2}); text[0] != want {
		t.Errorf("fluent %+v, want %+v (job 12 holds both)", text[0], want)
	}
	busy, err := ParseLicensesText(openFixture(t, "scontrol-show-lic-busy.txt"))
	if err != nil || len(busy) != 1 || busy[0] != (License{Name: "e2elic@flex", Total: 4, Remote: true}) {
		t.Errorf("22.05 busy: %+v, %v", busy, err)
	}
	if l, err := ParseLicensesText(strings.NewReader("No licenses configured in Slurm.\n")); err != nil || len(l) != 0 {
		t.Errorf("none: %v, %v", l, err)
	}
	if _, err := ParseLicensesText(strings.NewReader("LicenseName=x Total=many Used=0\n")); err == nil {
		t.Error("bad total accepted")
	}
}

// The text form gives what JSON gives, job group by job group: the default
// memory of a job without --mem, the reason code behind a description,
// array tasks, times.
func TestSqueueTextAndJSONAgree(t *testing.T) {
	text, ref, err := ParseSqueueText(bytes.NewReader(withSep(readFixture(t, "squeue-O-busy.txt"), len(squeueTextFields), testSep)), testSep)
	if err != nil || ref.Records != 0 {
		t.Fatal(err, ref)
	}
	js, err := ParseSqueueJSON(openFixture(t, "squeue-busy.json"))
	if err != nil {
		t.Fatal(err)
	}
	type key struct{ state, reason, partition, user, account, qos string }
	type sums struct{ jobs, cpus, mem, gpus float64 }
	group := func(jobs []Job) map[key]sums {
		out := map[key]sums{}
		for _, j := range jobs {
			if !j.InQueue() {
				continue
			}
			k := key{j.State, j.Reason, j.Partition, j.User, j.Account, j.QOS}
			s, n := out[k], float64(j.Count)
			out[k] = sums{s.jobs + n, s.cpus + n*j.CPUs, s.mem + n*j.MemoryBytes, s.gpus + n*j.GPUs}
		}
		return out
	}
	if a, b := group(text), group(js); !reflect.DeepEqual(a, b) {
		t.Errorf("text %v\njson %v", a, b)
	}
	times := func(jobs []Job) []string {
		var out []string
		for _, j := range jobs {
			if j.InQueue() {
				out = append(out, j.RawID+" "+j.Submit.UTC().String()+" "+j.Start.UTC().String()+" "+j.State)
			}
		}
		sort.Strings(out)
		return out
	}
	// Only running jobs have a start time both forms print.
	for _, jobs := range [][]Job{text, js} {
		for i := range jobs {
			if jobs[i].State == "PENDING" {
				jobs[i].Start = time.Time{}
			}
		}
	}
	tt, jt := times(text), times(js)
	// -r splits the held array that JSON keeps as one record.
	if len(tt) != 11 || len(jt) != 9 {
		t.Fatalf("text %d, json %d queued records", len(tt), len(jt))
	}
	for _, l := range jt {
		if !strings.HasPrefix(l, "11 ") && !slices.Contains(tt, l) {
			t.Errorf("json %q not in text", l)
		}
	}
}

func TestPendingReason(t *testing.T) {
	for in, want := range map[string]string{
		"Resources":             "Resources",
		"QOSMaxCpuPerUserLimit": "QOSMaxCpuPerUserLimit",
		"None":                  "None",
		"ReqNodeNotAvail, UnavailableNodes:node[1-4]":                                  "ReqNodeNotAvail",
		"ReqNodeNotAvail, Reserved for maintenance":                                    "ReqNodeNotAvail",
		"job requeued in held state":                                                   "JobHeldUser",
		"Reservation maint was deleted":                                                "ReservationDeleted",
		"Reservation x is invalid":                                                     "ReservationInvalid",
		"uid 1001 not in group permitted to use this partition (p). groups allowed: g": "InvalidAccount",
		// 22.05 (busy capture, job 9) and 24.11 (job 18) print this for Resources.
		"Nodes required for job are DOWN, DRAINED or reserved for jobs in higher priority partitions":            "Resources",
		"Nodes required for job are DOWN, DRAINED, REBOOTING or reserved for jobs in higher priority partitions": "Resources",
		"Something slurmctld says one day about node n17":                                                        ReasonUnrecognized,
		"": "",
	} {
		if got := PendingReason(in); got != want {
			t.Errorf("PendingReason(%q) = %q, want %q", in, got, want)
		}
	}
	// JSON gives the code for the same job: the text's description maps to it.
	js, _ := ParseSqueueJSON(openFixture(t, "../24.11/squeue-running.json"))
	for _, j := range js {
		if j.ID == "18" && j.Reason != "Resources" {
			t.Errorf("24.11 job 18 reason %q", j.Reason)
		}
	}
}

func TestBoundedText(t *testing.T) {
	for _, c := range []struct {
		in   string
		max  int
		want string
	}{
		{"disk replaced, burn-in", 80, "disk replaced, burn-in"},
		{"a\x00b\x1b[31mc\td  e\n", 80, "ab[31mc d e"},
		{"héhéhé", 6, "hé…"},
		{"héhéhé", 5, "h…"},
		{strings.Repeat("x", 100), 10, "xxxxxxx…"},
		{"bad \xff utf8", 80, "bad \uFFFD utf8"},
	} {
		if got := BoundedText(c.in, c.max); got != c.want || len(got) > c.max {
			t.Errorf("BoundedText(%q, %d) = %q, want %q", c.in, c.max, got, c.want)
		}
	}
}

func TestExpandHostlist(t *testing.T) {
	for in, want := range map[string][]string{
		"node1":                  {"node1"},
		"node[1-3]":              {"node1", "node2", "node3"},
		"n[08-10],gpu1":          {"n08", "n09", "n10", "gpu1"},
		"r[1-2]-n[1,3]":          {"r1-n1", "r1-n3", "r2-n1", "r2-n3"},
		"node[001-002,7],x[1-1]": {"node001", "node002", "node7", "x1"}, // each range its own width
		"":                       nil,
	} {
		got, err := ExpandHostlist(in, 100)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("ExpandHostlist(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"node[1-", "node[3-1]", "node]", "node[a-b]", "n[1-1000000000]"} {
		if _, err := ExpandHostlist(bad, 1000); err == nil {
			t.Errorf("ExpandHostlist(%q) accepted", bad)
		}
	}
}

func TestParseSacctArrayRecord(t *testing.T) {
	in := "JobID|JobIDRaw|State|Partition|Account|Submit|End\n" +
		"8_[2-3]|8|CANCELLED by 1001|batch|chem|2026-11-24T10:00:00|2026-11-24T10:05:00\n" +
		"8_1|9|COMPLETED|batch|chem|2026-11-24T10:00:00|2026-11-24T10:04:00\n" +
		"9_[1-100%5]|10|CANCELLED by 0|batch|chem|2026-11-24T10:00:00|2026-11-24T10:05:00\n"
	jobs, err := ParseSacct(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if jobs[0].Count != 2 || jobs[1].Count != 1 || jobs[2].Count != 100 || jobs[0].State != "cancelled" {
		t.Errorf("counts %+v", jobs)
	}
	// The busy capture: the e2e's own sacct query, header included.
	busy, err := ParseSacct(openFixture(t, "sacct-X-busy.txt"))
	if err != nil || len(busy) != 2 || busy[1] != (SacctJob{ID: "8", JobID: "8", State: "completed", Partition: "debug",
		Account: "physics", Submit: "2026-11-25T00:13:11", End: "2026-11-25T00:13:31", Count: 1}) {
		t.Errorf("busy: %+v, %v", busy, err)
	}
}

func TestSacctCatchUpWindows(t *testing.T) {
	since := time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)
	s := NewSacctCounter(since, 2*time.Minute, 24*time.Hour, time.UTC)
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	var windows []string
	for range 4 {
		from, to, _ := s.window(now)
		windows = append(windows, from.Format("02T15")+"-"+to.Format("02T15:04"))
		s.add(nil, from, to, now)
	}
	// Each window reaches back the overlap into the one before.
	want := []string{"20T00-21T00:02", "21T00-22T00:02", "22T00-22T12:00", "22T11-22T12:00"}
	if !reflect.DeepEqual(windows, want) {
		t.Errorf("windows %v, want %v", windows, want)
	}
	if st := s.Counts().Stats; st.Behind != 0 || st.Queries != 4 || st.Window != 2*time.Minute {
		t.Errorf("stats %+v", st)
	}
}

func TestParseSince(t *testing.T) {
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	for in, want := range map[string]time.Time{
		"24h":                       now.Add(-24 * time.Hour),
		"24 hours ago":              now.Add(-24 * time.Hour),
		"7 days ago":                now.Add(-7 * 24 * time.Hour),
		"1 week ago":                now.Add(-7 * 24 * time.Hour),
		"1 Week Ago":                now.Add(-7 * 24 * time.Hour),
		"30 minutes ago":            now.Add(-30 * time.Minute),
		"2 months ago":              time.Date(2026, 9, 21, 12, 0, 0, 0, time.UTC),
		"now":                       now,
		"2026-01-01":                time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
		"2026-01-01T06:30:00":       time.Date(2026, 1, 1, 6, 30, 0, 0, time.UTC),
		"2026-01-01 06:30:00":       time.Date(2026, 1, 1, 6, 30, 0, 0, time.UTC),
		"2026-01-01T06:30":          time.Date(2026, 1, 1, 6, 30, 0, 0, time.UTC),
		"2026-01-01T06:30:00+01:00": time.Date(2026, 1, 1, 5, 30, 0, 0, time.UTC),
		"1798761600":                time.Unix(1798761600, 0),
	} {
		if got, err := ParseSince(in, now, time.UTC); err != nil || !got.Equal(want) {
			t.Errorf("ParseSince(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "-1h", "yesterday", "7 fortnights ago", "x days ago", "-3 days ago", "7 days"} {
		if _, err := ParseSince(bad, now, time.UTC); err == nil {
			t.Errorf("ParseSince(%q) accepted", bad)
		}
	}
}
