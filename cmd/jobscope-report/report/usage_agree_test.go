// SPDX-License-Identifier: Apache-2.0

package report

import (
	"context"
	"math"
	"testing"
	"time"
)

// agreeNow is when the agreement test's reports are made.
var agreeNow = time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)

// agreeJobs are user erin's jobs on cluster c2, each with what makes
// counted time and counted CPU drift apart when they come from different
// windows.
func agreeJobs() []simJob {
	at := func(h, m int) time.Time { return time.Date(2026, 3, 10, h, m, 0, 0, time.UTC) }
	const gib = 1 << 30
	node := func(name string, load []float64) simNode {
		return simNode{name: name, coreLoad: load, memLimit: 8 * gib, memPeak: 2 * gib, watts: 200, procs: 2}
	}
	return []simJob{
		// Seen from its start, on two nodes, one of them nearly idle.
		{id: "5001", user: "erin", account: "geo", partition: "cpu", name: "a", cluster: "c2", exe: "/bin/a",
			start: at(6, 0), end: at(8, 0), nodes: []simNode{node("m01", cores(4, 0.6)), node("m02", cores(4, 0.05))}},
		// Running for 3 hours when jobscope was first scraped: its CPU
		// counter is at ~5.8 core-hours in its first sample.
		{id: "5002", user: "erin", account: "geo", partition: "cpu", name: "b", cluster: "c2", exe: "/bin/b",
			start: at(2, 0), seenFrom: at(5, 0), end: at(9, 0), nodes: []simNode{node("m03", cores(8, 0.25))}},
		// Not scraped for 40 minutes (the counter still counts them); its
		// first two minutes carry no job_key yet.
		{id: "5003", user: "erin", account: "geo", partition: "cpu", name: "c", cluster: "c2", exe: "/bin/c",
			start: at(6, 30), end: at(8, 30), missed: [2]time.Time{at(7, 0), at(7, 40)}, unlabeled: 2 * time.Minute,
			nodes: []simNode{node("m04", cores(2, 0.9))}},
		// Still running when the reports are made: the last rule
		// evaluation (11:59) saw the sample of 11:58:50, the job report reads
		// the raw one of 11:59:50, 0.8% of its 2 hours (one rule interval,
		// as a live Prometheus lags too).
		{id: "5004", user: "erin", account: "geo", partition: "cpu", name: "d", cluster: "c2", exe: "/bin/d",
			start: at(10, 0), end: agreeNow, nodes: []simNode{node("m05", cores(1, 0.95))}},
	}
}

func agreeOptions(url string) Options {
	cfg := DefaultConfig()
	cfg.Prometheus.URL, cfg.Cluster, cfg.Sacct = url, "c2", "never"
	return Options{Config: cfg, Now: func() time.Time { return agreeNow }, Location: time.UTC, CurrentUser: "erin"}
}

func near(got, want float64) bool {
	return math.Abs(got-want) <= 0.01*math.Abs(want)
}

// TestUsageAgreesWithJobReports: over a period that holds the jobs whole,
// a real Prometheus's usage summary equals the sum of the jobs' own
// reports (allocated and used core-hours, efficiency, energy) within 1%,
// the job already running when jobscope started and the job with missed
// scrapes included; over a period that begins after a job's start but
// before jobscope first saw it, that job counts only what was observed,
// at its true efficiency.
func TestUsageAgreesWithJobReports(t *testing.T) {
	needPrometheus(t)
	lp := startPrometheus(t, agreeJobs(), agreeNow)
	ctx := context.Background()
	o := agreeOptions(lp.url)

	u, err := UsageReport(ctx, o, UsageFilter{User: "erin"}, agreeNow.Add(-24*time.Hour), agreeNow)
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]UsageJob{}
	for _, j := range u.Jobs {
		byID[j.ID] = j
	}
	if len(u.Jobs) != len(agreeJobs()) {
		t.Fatalf("usage lists %d jobs, want %d: %+v", len(u.Jobs), len(agreeJobs()), u.Jobs)
	}
	var alloc, used, kwh float64
	for _, sj := range agreeJobs() {
		rep, err := JobReport(ctx, o, sj.id)
		if err != nil {
			t.Fatalf("job %s: %v", sj.id, err)
		}
		a := rep.CPU.Cores * rep.Job.ObservedSeconds / 3600
		c, e := deref(rep.CPU.UsedSeconds)/3600, deref(rep.Energy.KWh)
		alloc, used, kwh = alloc+a, used+c, kwh+e
		uj := byID[sj.id]
		t.Logf("job %s: report %.4f core-h allocated, %.4f used, %.6f kWh; usage %.4f, %.4f, %.6f",
			sj.id, a, c, e, uj.CoreHours, deref(uj.CPUHoursUsed), deref(uj.EnergyKWh))
		if !near(uj.CoreHours, a) || !near(deref(uj.CPUHoursUsed), c) || !near(deref(uj.EnergyKWh), e) {
			t.Errorf("job %s: usage says %.4f core-hours allocated, %.4f used, %.6f kWh; its report %.4f, %.4f, %.6f",
				sj.id, uj.CoreHours, deref(uj.CPUHoursUsed), deref(uj.EnergyKWh), a, c, e)
		}
	}
	tot := u.Totals
	if !near(tot.CoreHours, alloc) || !near(deref(tot.CPUHoursUsed), used) ||
		!near(deref(tot.CPUEfficiency), used/alloc) || !near(deref(tot.EnergyKWh), kwh) {
		t.Errorf("usage totals %.4f core-hours allocated, %.4f used (efficiency %.4f), %.6f kWh; "+
			"the job reports sum to %.4f, %.4f (%.4f), %.6f",
			tot.CoreHours, deref(tot.CPUHoursUsed), deref(tot.CPUEfficiency), deref(tot.EnergyKWh),
			alloc, used, used/alloc, kwh)
	}

	// From 04:00, after job 5002 began (02:00) and before jobscope first
	// saw it (05:00): the period has its observed part only, 05:00 to its
	// end at 09:00, with 8 cores a quarter busy (long past the ramp).
	since := time.Date(2026, 3, 10, 4, 0, 0, 0, time.UTC)
	u, err = UsageReport(ctx, o, UsageFilter{User: "erin"}, since, agreeNow)
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range u.Jobs {
		if j.ID != "5002" {
			continue
		}
		if want := 8 * 4.0; !near(j.CoreHours, want) || !near(deref(j.CPUEfficiency), 0.25) {
			t.Errorf("job 5002 from %s: %.4f core-hours (want %.4f), efficiency %.4f (want 0.25)",
				since.Format(time.RFC3339), j.CoreHours, want, deref(j.CPUEfficiency))
		}
		return
	}
	t.Errorf("job 5002 missing from the usage since %s: %+v", since.Format(time.RFC3339), u.Jobs)
}
