// SPDX-License-Identifier: Apache-2.0

package report

import (
	"fmt"
	"math"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"

	"github.com/jobscope/jobscope/internal/testutil"
	"github.com/jobscope/jobscope/slurmcli"
)

// TestNamesExist: every metric the report reads is one the exporter
// prints (its golden outputs), and every summary series is recorded by
// the shipped usage rules. A rename breaks this test, not users' reports.
func TestNamesExist(t *testing.T) {
	golden := testutil.GoldenMetricNames(t, "../../../testdata")
	for _, m := range []string{mInfo, mCPUUsage, mCPUMode, mCPUCore, mCPUs, mCPUThrottled, mMemUsage, mMemPeak,
		mMemLimit, mMemStat, mMemSwap, mMemEvents, mPressure, mBlockIO, mStorageIO, mSyscallIO, mSyscalls,
		mProcStorageIO, mProcSyscallIO, mNetwork, mProcesses, mThreads, mOpenFDs, mProcessCPU, mGPUInfo, mGPUUtil,
		mGPUMemUsed, mGPUMemTotal, mGPUSMActive, mGPUTensor, mEnergy, mEmissions} {
		if !golden[m] {
			t.Errorf("the report reads %s, which no golden output of the exporter has", m)
		}
	}
	rules, err := os.ReadFile("../../../contrib/prometheus/" + usageRulesFile)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(rules), "- name: "+usageGroup+"\n") {
		t.Errorf("%s has no group %s", usageRulesFile, usageGroup)
	}
	for _, r := range []string{rCPUs, rCPUUsed, rScrapeTime, rGPUs, rGPUUtil, rMemPeakRatio, rMemLimit, rOOMKills, rEnergy, rEmissions} {
		if !strings.Contains(string(rules), "- record: "+r+"\n") {
			t.Errorf("the usage report reads %s, which %s does not record", r, usageRulesFile)
		}
	}
}

func baseReport() *Report {
	return &Report{
		Job: Job{ID: "1", State: "COMPLETED", ElapsedSeconds: 3600, ObservedSeconds: 3600, Nodes: []string{"n1"}},
		CPU: CPU{Cores: 8, Efficiency: ptr(0.9), CoresInUse: ptr(7.2)},
		Memory: Memory{PeakRatio: ptr(0.6), RequestedBytes: ptr(16 << 30), PeakBytes: ptr(9.6 * (1 << 30)),
			OOMKills: ptr(0)},
		Nodes: []Node{{Name: "n1", Cores: 8, CPUUsedSeconds: ptr(7.2 * 3600), MemoryPeakBytes: ptr(9.6 * (1 << 30)),
			MemoryRequestedBytes: ptr(16 << 30)}},
	}
}

func ids(ws []Warning) []string {
	var out []string
	for _, w := range ws {
		out = append(out, w.ID)
	}
	return out
}

// TestWarningThresholds: each warning fires on its side of the threshold
// and a site's threshold moves the line.
func TestWarningThresholds(t *testing.T) {
	def := DefaultConfig().Thresholds
	for _, c := range []struct {
		name  string
		edit  func(*Report)
		th    func(*Thresholds)
		want  []string
		avoid []string
	}{
		{name: "efficient job", want: nil},
		{name: "cpu 45%", edit: func(r *Report) { r.CPU.Efficiency = ptr(0.45) }, want: []string{wCPULow}},
		{name: "cpu 45%, jobstats' 65% line", edit: func(r *Report) { r.CPU.Efficiency = ptr(0.6) },
			th: func(t *Thresholds) { t.CPUEfficiencyLow = 0.65 }, want: []string{wCPULow}},
		{name: "cpu 5%", edit: func(r *Report) { r.CPU.Efficiency = ptr(0.05) }, want: []string{wCPUVeryLow}, avoid: []string{wCPULow}},
		{name: "short job: no utilisation notes", edit: func(r *Report) {
			r.CPU.Efficiency, r.Job.ElapsedSeconds = ptr(0.05), 120
		}, avoid: []string{wCPUVeryLow}},
		{name: "short job, site lowered min_elapsed", edit: func(r *Report) {
			r.CPU.Efficiency, r.Job.ElapsedSeconds = ptr(0.05), 120
		}, th: func(t *Thresholds) { t.MinElapsed = model.Duration(time.Minute) }, want: []string{wCPUVeryLow}},
		{name: "memory 10%", edit: func(r *Report) { r.Memory.PeakRatio = ptr(0.1) }, want: []string{wMemLow}},
		{name: "memory 10% of a small request", edit: func(r *Report) {
			r.Memory.PeakRatio, r.Nodes[0].MemoryRequestedBytes = ptr(0.1), ptr(512<<20)
		}, avoid: []string{wMemLow}},
		{name: "memory 96%", edit: func(r *Report) { r.Memory.PeakRatio = ptr(0.96) }, want: []string{wMemHigh}},
		{name: "OOM kill, even when short", edit: func(r *Report) {
			r.Memory.OOMKills, r.Memory.PeakRatio, r.Job.ElapsedSeconds = ptr(2), ptr(1), 10
		}, want: []string{wOOM}, avoid: []string{wMemHigh}},
		{name: "OUT_OF_MEMORY state", edit: func(r *Report) { r.Job.State = "OUT_OF_MEMORY" }, want: []string{wOOM}},
		{name: "idle GPU", edit: func(r *Report) {
			r.GPU = GPU{Count: 2, UtilizationMean: ptr(0.4), Devices: []GPUDevice{
				{Node: "n1", Index: "0", UtilizationMean: ptr(0.8), IdleFraction: ptr(0)},
				{Node: "n1", Index: "1", UtilizationMean: ptr(0), IdleFraction: ptr(0.97)}}}
		}, want: []string{wGPUIdle}, avoid: []string{wGPULow}},
		{name: "low GPU", edit: func(r *Report) {
			r.GPU = GPU{Count: 1, UtilizationMean: ptr(0.12), Devices: []GPUDevice{{Node: "n1", Index: "0", IdleFraction: ptr(0.3)}}}
		}, want: []string{wGPULow}},
		{name: "one of two nodes", edit: func(r *Report) {
			r.Nodes = append(r.Nodes, Node{Name: "n2", Cores: 8, CPUUsedSeconds: ptr(30)})
		}, want: []string{wOneNode}},
		{name: "few cores", edit: func(r *Report) {
			r.CPU.PerCore = &CoreBalance{Node: "n1", Cores: 16, CoresFor90Percent: 2}
		}, want: []string{wImbalance}},
		{name: "few cores of four: under the minimum", edit: func(r *Report) {
			r.CPU.PerCore = &CoreBalance{Node: "n1", Cores: 3, CoresFor90Percent: 1}
		}, avoid: []string{wImbalance}},
		{name: "small IO", edit: func(r *Report) { r.IO.SyscallsPerSecond, r.IO.BytesPerSyscall = ptr(3000), ptr(300) }, want: []string{wSmallIO}},
		{name: "big IO", edit: func(r *Report) { r.IO.SyscallsPerSecond, r.IO.BytesPerSyscall = ptr(3000), ptr(1<<20) }, avoid: []string{wSmallIO}},
		{name: "long wait, little use", edit: func(r *Report) {
			r.Job.WaitSeconds, r.CPU.Efficiency = ptr(7200), ptr(0.3)
		}, want: []string{wQueueWait, wCPULow}},
		{name: "long wait, full use", edit: func(r *Report) { r.Job.WaitSeconds = ptr(7200) }, avoid: []string{wQueueWait}},
		{name: "time limit", edit: func(r *Report) { r.Job.TimeLimitSeconds = ptr(86400) }, want: []string{wTimeLimitSlack}},
		{name: "time limit, running", edit: func(r *Report) {
			r.Job.TimeLimitSeconds, r.Job.Running, r.Job.State = ptr(86400), true, "RUNNING"
		}, avoid: []string{wTimeLimitSlack}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := baseReport()
			if c.edit != nil {
				c.edit(r)
			}
			th := def
			if c.th != nil {
				c.th(&th)
			}
			got := ids(warnings(r, th, ""))
			for _, w := range c.want {
				if !slices.Contains(got, w) {
					t.Errorf("warnings %v, want %s", got, w)
				}
			}
			for _, w := range c.avoid {
				if slices.Contains(got, w) {
					t.Errorf("warnings %v, must not have %s", got, w)
				}
			}
			if c.want == nil && c.avoid == nil && len(got) > 0 {
				t.Errorf("warnings %v, want none", got)
			}
		})
	}
}

// TestEnergyNeverCountsTwice: IPMI and RAPL both describe the host; a node
// with IPMI counts IPMI, one without counts RAPL, GPUs come on top.
func TestEnergyNeverCountsTwice(t *testing.T) {
	var r Report
	energyFigures(&r, map[string]map[string]float64{
		"a": {"ipmi": 1000, "rapl_cpu": 700, "rapl_dram": 100, "gpu": 500},
		"b": {"rapl_cpu": 300, "rapl_dram": 50, "gpu": 0},
	}, map[string]float64{"a": 10, "b": 2})
	if *r.Energy.Joules != 1000+500+350 || *r.Energy.GPUJoules != 500 || r.Energy.HostSource != "ipmi+rapl" ||
		*r.Energy.EmissionsGrams != 12 {
		t.Errorf("energy %+v", r.Energy)
	}
}

func TestCoreBalance(t *testing.T) {
	b := coreBalance(map[string]map[string]float64{
		"even":  {"0": 100, "1": 100, "2": 100, "3": 100},
		"stuck": {"0": 400, "1": 1, "2": 1},
	}, map[string]float64{"even": 4, "stuck": 8})
	// The unlisted allocated cores of "stuck" count as idle.
	if b.Node != "stuck" || b.Cores != 8 || b.CoresFor90Percent != 1 || b.BusiestSeconds != 400 {
		t.Errorf("balance %+v", b)
	}
}

func TestKeyStart(t *testing.T) {
	if ts, ok := keyStart("c1/42/1772445600", "42"); !ok || ts.Unix() != 1772445600 {
		t.Errorf("keyStart = %v %v", ts, ok)
	}
	for _, k := range []string{"sDVNM87TZNTA00", "c1/43/1772445600", "c1/42/x", "42"} {
		if _, ok := keyStart(k, "42"); ok {
			t.Errorf("keyStart(%q) accepted", k)
		}
	}
}

func TestMatchSacct(t *testing.T) {
	at := func(s string) time.Time { v, _ := time.Parse(time.RFC3339, s); return v }
	recs := []slurmcli.SacctRecord{
		{ID: "7", Cluster: "c1", Start: at("2026-01-01T00:00:00Z"), End: at("2026-01-01T01:00:00Z")},
		{ID: "7", Cluster: "c1", Start: at("2026-02-01T00:00:00Z")},
		{ID: "7", Cluster: "c2", Start: at("2026-02-01T00:00:10Z")},
	}
	c := &candidate{labels: map[string]string{lClust: "c1"}, first: at("2026-02-01T00:00:20Z")}
	if got := matchSacct(recs, c, c.first); got == nil || got.Cluster != "c1" || !got.Start.Equal(recs[1].Start) {
		t.Errorf("matched %+v", got)
	}
	c.first = at("2025-06-01T00:00:00Z")
	if got := matchSacct(recs, c, c.first); got != nil {
		t.Errorf("a job that started after Prometheus's first sample matched: %+v", got)
	}
}

func TestFormats(t *testing.T) {
	for in, want := range map[float64]string{0: "0%", 0.05: "5.0%", 0.4258: "43%", 1: "100%"} {
		if got := pct(in); got != want {
			t.Errorf("pct(%v) = %q, want %q", in, got, want)
		}
	}
	for in, want := range map[float64]string{512: "512 B", 1536: "1.5 KiB", 64 << 30: "64 GiB", 22548578304: "21 GiB"} {
		if got := bytesStr(in); got != want {
			t.Errorf("bytesStr(%v) = %q, want %q", in, got, want)
		}
	}
	for in, want := range map[float64]string{45: "45s", 200: "3m 20s", 7500: "2h 05m", 2 * 86400: "2d 00h"} {
		if got := fmtDuration(in); got != want {
			t.Errorf("fmtDuration(%v) = %q, want %q", in, got, want)
		}
	}
	if got := num(27003900); got != "27,003,900" {
		t.Errorf("num = %q", got)
	}
	lines := wrap("aaa bbb ccc "+strings.Repeat("x", 25), 10)
	if !reflect.DeepEqual(lines, []string{"aaa bbb", "ccc", strings.Repeat("x", 10), strings.Repeat("x", 10), "xxxxx"}) {
		t.Errorf("wrap = %q", lines)
	}
}

func TestParseWhen(t *testing.T) {
	ref := time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC)
	for in, want := range map[string]time.Time{
		"30d": ref.Add(-30 * 24 * time.Hour), "12h": ref.Add(-12 * time.Hour),
		"2026-01-01": time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), "2026-02-01T08:00:00Z": time.Date(2026, 2, 1, 8, 0, 0, 0, time.UTC),
	} {
		got, err := parseWhen(in, ref, time.UTC)
		if err != nil || !got.Equal(want) {
			t.Errorf("parseWhen(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	if _, err := parseWhen("last week", ref, time.UTC); err == nil {
		t.Error("parseWhen accepted nonsense")
	}
}

// TestQueriesQuoteInput: a node name with regex characters is matched
// literally and label values cannot break out of their quotes.
func TestQueriesQuoteInput(t *testing.T) {
	s := newScope(`4"2`, "instance", []string{"n1.x", "n(2)"}, time.Unix(0, 0), time.Unix(3600, 0), 15*time.Second)
	q := s.sel(mCPUUsage)
	if !strings.Contains(q, `jobid="4\"2"`) || !strings.Contains(q, `instance=~"n1\\.x|n\\(2\\)"`) {
		t.Errorf("selector %s", q)
	}
	if !regexp.MustCompile(`\[3601s:15s\]`).MatchString(s.maxOfSum(mProcesses, "state")) {
		t.Errorf("subquery %s", s.maxOfSum(mProcesses, "state"))
	}
}

// TestJSONFieldsDocumented: every JSON field of the job report and the
// usage summary is named in docs/report.md, so the documented contract
// stays whole.
func TestJSONFieldsDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../../docs/report.md")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[reflect.Type]bool{}
	var walk func(reflect.Type)
	walk = func(ty reflect.Type) {
		for ty.Kind() == reflect.Pointer || ty.Kind() == reflect.Slice || ty.Kind() == reflect.Array {
			ty = ty.Elem()
		}
		if ty.Kind() != reflect.Struct || seen[ty] || ty.PkgPath() != reflect.TypeOf(Report{}).PkgPath() {
			return
		}
		seen[ty] = true
		for i := 0; i < ty.NumField(); i++ {
			f := ty.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name != "" && !strings.Contains(string(doc), "`"+name+"`") && !strings.Contains(string(doc), "."+name+"`") &&
				!strings.Contains(string(doc), "`"+strings.ToLower(ty.Name())+"."+name) {
				t.Errorf("%s.%s (json %q) is not in docs/report.md", ty.Name(), f.Name, name)
			}
			walk(f.Type)
		}
	}
	walk(reflect.TypeOf(Report{}))
	walk(reflect.TypeOf(Usage{}))
}

// TestUnkeyedSamplesJoinTheirJob: the first scrapes of a job may carry an
// empty job_key (metadata not known yet); they belong to the keyed job
// that follows on the same node, not to another job that reused the id.
func TestUnkeyedSamplesJoinTheirJob(t *testing.T) {
	at := func(m int) time.Time { return time.Date(2026, 3, 1, 10, m, 0, 0, time.UTC) }
	cands := []*candidate{
		{key: "", nodes: []string{"n1"}, labels: map[string]string{lUser: ""}, first: at(0), last: at(1)},
		{key: "c/7/1", nodes: []string{"n1"}, labels: map[string]string{lUser: "alice"}, first: at(1), last: at(30)},
		{key: "", nodes: []string{"n9"}, labels: map[string]string{}, first: at(40), last: at(50)},
	}
	got := mergeUnkeyed(cands)
	if len(got) != 2 || got[0].key != "c/7/1" || !got[0].first.Equal(at(0)) || got[1].key != "" || got[1].nodes[0] != "n9" {
		for _, c := range got {
			t.Logf("%+v", *c)
		}
		t.Fatal("unkeyed samples not folded into their job")
	}
}

// TestUsageFoldsUnkeyed: a job's summaries from before it had a job_key
// join its keyed ones (one window, counters from the earliest value);
// with two keyed jobs of the id they stay apart.
func TestUsageFoldsUnkeyed(t *testing.T) {
	span := func(start, end, cpuFirst, cpuLast float64) usageSpan {
		return usageSpan{timed: true, start: start, end: end, first: [3]*float64{ptr(cpuFirst)}, last: [3]*float64{ptr(cpuLast)}}
	}
	jobs, spans := foldUnkeyed([]UsageJob{
		{ID: "8", Key: "e/8/1", Cluster: "e", Cores: 2},
		{ID: "8", Key: "", Cluster: "e", Cores: 1},
		{ID: "9", Key: "e/9/1", Cluster: "e"},
		{ID: "9", Key: "e/9/2", Cluster: "e"},
		{ID: "9", Key: "", Cluster: "e"},
		{ID: "10", Key: "e/10/1", Cluster: "e", Cores: 1},
		{ID: "10", Key: "", Cluster: "e", Cores: 1},
	}, []usageSpan{
		// Keyed from the job's start (counters from 0); its unkeyed
		// first minute is inside that window already.
		span(60, 1860, 0, 900), span(65, 120, 2, 30),
		span(0, 1, 0, 0), span(0, 1, 0, 0), span(0, 1, 0, 0),
		// Keyed from its first sample in the period; the unkeyed part
		// came earlier in the period and widens the window.
		span(200, 1000, 100, 500), span(100, 190, 50, 95),
	})
	if len(jobs) != 5 || len(spans) != 5 {
		t.Fatalf("folded into %d jobs, %d spans: %+v", len(jobs), len(spans), jobs)
	}
	for i, want := range map[int][3]float64{0: {1800, 0, 900}, 4: {900, 50, 500}} {
		usageFigures(&jobs[i], spans[i])
		if sp := spans[i]; sp.seconds() != want[0] || *sp.first[0] != want[1] || *sp.last[0] != want[2] {
			t.Errorf("job %s: window %gs, CPU %g..%g; want %v", jobs[i].ID, sp.seconds(), *sp.first[0], *sp.last[0], want)
		}
	}
	if j := jobs[0]; j.Cores != 2 || j.CoreHours != 1 || *j.CPUHoursUsed != 0.25 || *j.CPUEfficiency != 0.25 {
		t.Errorf("job 8: %+v", j)
	}
}

// TestUsageWindow: a job that started in the period counts from its start
// (counters from 0, however late jobscope first saw it); one that started
// before counts its observed part only (the counter's gain, not its value);
// without recorded scrape times the window is counted from samples.
func TestUsageWindow(t *testing.T) {
	since := time.Unix(1_000_000, 0)
	t0 := since.Unix() + 3600
	job := func(id string, start int64, vals map[string]float64) map[string]model.Vector {
		out := map[string]model.Vector{}
		m := model.Metric{lJobID: model.LabelValue(id), lJobKey: model.LabelValue(fmt.Sprintf("c/%s/%d", id, start)), lClust: "c"}
		for name, v := range vals {
			out[name] = model.Vector{{Metric: m, Value: model.SampleValue(v)}}
		}
		return out
	}
	res := map[string]model.Vector{}
	for _, part := range []map[string]model.Vector{
		// Started an hour into the period, first scraped 2 h later at 2
		// core-hours (a quarter busy), then three quarters busy for 1 h.
		job("1", t0, map[string]float64{"count": 60, "cores": 4, "first": float64(t0 + 7200), "last": float64(t0 + 10800),
			"cpu_first": 7200, "cpu_last": 7200 + 10800}),
		// Started a day before the period, first scraped in it at 10 core-hours.
		job("2", since.Unix()-86400, map[string]float64{"count": 60, "cores": 2, "first": float64(t0), "last": float64(t0 + 3600),
			"cpu_first": 36000, "cpu_last": 36000 + 3600}),
		// Rules without scrape times: 60 samples a minute apart.
		job("3", t0, map[string]float64{"count": 60, "cores": 1, "cpu_first": 100, "cpu_last": 100 + 1800}),
	} {
		for name, v := range part {
			res[name] = append(res[name], v...)
		}
	}
	jobs, untimed := usageJobs(res, since, 60, DefaultConfig().Thresholds)
	if untimed != 1 || len(jobs) != 3 {
		t.Fatalf("%d jobs, %d untimed: %+v", len(jobs), untimed, jobs)
	}
	want := map[string][3]float64{"1": {10800, 12, 5.0 / 12}, "2": {3600, 2, 0.5}, "3": {3600, 1, 0.5}}
	for _, j := range jobs {
		w := want[j.ID]
		if j.ObservedSeconds != w[0] || j.CoreHours != w[1] || j.CPUEfficiency == nil || *j.CPUEfficiency != w[2] {
			t.Errorf("job %s: %gs, %g core-hours, efficiency %v; want %v", j.ID, j.ObservedSeconds, j.CoreHours,
				derefOr(j.CPUEfficiency), w)
		}
	}
}

// A SLUID holds the job's submission to the millisecond; the report reads
// it as a lower bound (less the TAI offset Slurm's clock may carry).
func TestSluidSubmitted(t *testing.T) {
	// Jobs 7 and 1 of a site run on 26.05, submitted at these times
	// (their first scrapes came 12 s and 5 s later).
	for key, ms := range map[string]int64{"sB3XM8FWE3D600": 1795829468582, "sB3XM8FW8GDJ00": 1795829285298} {
		got, ok := sluidSubmitted(key)
		if want := time.UnixMilli(ms).Add(-37 * time.Second); !ok || !got.Equal(want) {
			t.Errorf("sluidSubmitted(%q) = %v %v, want %v", key, got, ok, want)
		}
	}
	for _, k := range []string{"", "s", "sB3XM8FWE3D60", "sB3XM8FWE3D6000", "xB3XM8FWE3D600", "sb3xm8fwe3d600",
		"sB3XM8FWE3D6U0", "sZZZZZZZZZZZZZ", "s0000000000000", "c/7/1795829480"} {
		if got, ok := sluidSubmitted(k); ok {
			t.Errorf("sluidSubmitted(%q) = %v, want none", k, got)
		}
	}
}

// On Slurm 26.05 the job_key is the SLUID: a job submitted in the period
// counts its CPU from 0 (as its report does, from sacct's start), while its
// window starts at its first sample; one submitted before the period
// counts from its first sample in it.
func TestUsageSLUIDKey(t *testing.T) {
	sub := time.UnixMilli(1795829468582).Unix() // job 7's SLUID
	first, last := float64(sub+12), float64(sub+252)
	row := func(id, key string, since time.Time) UsageJob {
		m := model.Metric{lJobID: model.LabelValue(id), lJobKey: model.LabelValue(key), lClust: "c", lUser: "alice"}
		res := map[string]model.Vector{}
		for name, v := range map[string]float64{"count": 25, "cores": 2, "first": first, "last": last,
			"cpu_first": 1.307961, "cpu_last": 85.416047} {
			res[name] = model.Vector{{Metric: m, Value: model.SampleValue(v)}}
		}
		jobs, _ := usageJobs(res, since, 10, DefaultConfig().Thresholds)
		if len(jobs) != 1 {
			t.Fatalf("%d jobs", len(jobs))
		}
		return jobs[0]
	}
	j := row("7", "sB3XM8FWE3D600", time.Unix(sub-3600, 0))
	if got := *j.CPUHoursUsed * 3600; math.Abs(got-85.416047) > 1e-6 || j.ObservedSeconds != 240 {
		t.Errorf("submitted in the period: %g CPU s over %g s, want 85.416047 over 240", got, j.ObservedSeconds)
	}
	j = row("7", "sB3XM8FWE3D600", time.Unix(sub+5, 0))
	if got := *j.CPUHoursUsed * 3600; math.Abs(got-(85.416047-1.307961)) > 1e-6 {
		t.Errorf("submitted before the period: %g CPU s, want %g", got, 85.416047-1.307961)
	}
}

func derefOr(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}
