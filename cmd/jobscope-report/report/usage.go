// SPDX-License-Identifier: Apache-2.0

package report

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/prometheus/common/model"
)

// UsageSchema names the usage summary's JSON layout.
const UsageSchema = "jobscope.report.usage/v1"

// Usage sums the jobs of a user, account or partition over a period, from
// the per-job summary series of the jobscope-usage recording rules.
type Usage struct {
	Schema             string         `json:"schema"`
	GeneratedAt        time.Time      `json:"generated_at"`
	Filter             UsageFilter    `json:"filter"`
	Since              time.Time      `json:"since"`
	Until              time.Time      `json:"until"`
	RuleInterval       float64        `json:"rule_interval_seconds"`
	RuleIntervalSource string         `json:"rule_interval_source"`
	Totals             UsageTotals    `json:"totals"`
	Warnings           []WarningCount `json:"warnings"`
	Jobs               []UsageJob     `json:"jobs"`
	Notes              []string       `json:"notes"`
}

// UsageFilter selects jobs; empty fields match everything.
type UsageFilter struct {
	User      string `json:"user"`
	Account   string `json:"account"`
	Partition string `json:"partition"`
	Cluster   string `json:"cluster"`
}

// UsageTotals are the period's sums; efficiencies are weighted by
// core-hours (CPU) and GPU-hours (GPU), memory is the mean over jobs.
type UsageTotals struct {
	Jobs                int      `json:"jobs"`
	CoreHours           float64  `json:"core_hours"`
	CPUHoursUsed        *float64 `json:"cpu_hours_used"`
	CPUEfficiency       *float64 `json:"cpu_efficiency"`
	GPUHours            float64  `json:"gpu_hours"`
	GPUUtilization      *float64 `json:"gpu_utilization"`
	MemoryPeakRatioMean *float64 `json:"memory_peak_ratio_mean"`
	EnergyKWh           *float64 `json:"energy_kwh"`
	EmissionsGrams      *float64 `json:"emissions_grams"`
	OOMKilledJobs       int      `json:"oom_killed_jobs"`
	JobsWithWarnings    int      `json:"jobs_with_warnings"`
	ObservedSecondsMean float64  `json:"observed_seconds_mean"`
}

// WarningCount is how many jobs raised one warning.
type WarningCount struct {
	ID       string `json:"id"`
	Severity string `json:"severity"`
	Title    string `json:"title"`
	Jobs     int    `json:"jobs"`
}

// UsageJob is one job's share of the period.
type UsageJob struct {
	ID                   string   `json:"id"`
	Key                  string   `json:"key"`
	Cluster              string   `json:"cluster"`
	User                 string   `json:"user"`
	Account              string   `json:"account"`
	Partition            string   `json:"partition"`
	Cores                float64  `json:"cores"`
	ObservedSeconds      float64  `json:"observed_seconds"`
	CoreHours            float64  `json:"core_hours"`
	CPUHoursUsed         *float64 `json:"cpu_hours_used"`
	CPUEfficiency        *float64 `json:"cpu_efficiency"`
	GPUs                 float64  `json:"gpus"`
	GPUHours             float64  `json:"gpu_hours"`
	GPUUtilization       *float64 `json:"gpu_utilization"`
	MemoryPeakRatio      *float64 `json:"memory_peak_ratio"`
	MemoryRequestedBytes *float64 `json:"memory_requested_bytes"`
	OOMKills             *float64 `json:"oom_kills"`
	EnergyKWh            *float64 `json:"energy_kwh"`
	EmissionsGrams       *float64 `json:"emissions_grams"`
	Warnings             []string `json:"warnings"`
}

// usageLabels identify a job in the summary series.
var usageLabels = []string{lJobID, lJobKey, lUser, lAcct, lPart, lClust}

// UsageReport sums the filtered jobs between since and until.
func UsageReport(ctx context.Context, o Options, f UsageFilter, since, until time.Time) (*Usage, error) {
	r, err := newRunner(o)
	if err != nil {
		return nil, err
	}
	if f.Cluster == "" {
		f.Cluster = r.cfg.Cluster
	}
	if !since.Before(until) {
		return nil, fmt.Errorf("--since %s is not before --until %s", since.Format(time.RFC3339), until.Format(time.RFC3339))
	}
	u := &Usage{Schema: UsageSchema, GeneratedAt: r.now, Filter: f, Since: since, Until: until,
		Warnings: []WarningCount{}, Jobs: []UsageJob{}, Notes: []string{}}
	iv, err := r.prom.ruleInterval(ctx, usageGroup)
	if err != nil {
		return nil, err
	}
	u.RuleInterval, u.RuleIntervalSource = iv.Seconds(), "prometheus"
	if iv == 0 {
		u.RuleInterval, u.RuleIntervalSource = time.Duration(r.cfg.Usage.RuleInterval).Seconds(), "config"
		u.Notes = append(u.Notes, fmt.Sprintf("Prometheus does not list the %s rule group (contrib/prometheus/%s): "+
			"the configured interval %s is assumed.", usageGroup, usageRulesFile, r.cfg.Usage.RuleInterval))
	}
	eq := map[string]string{}
	for k, v := range map[string]string{lUser: f.User, lAcct: f.Account, lPart: f.Partition, lClust: f.Cluster} {
		if v != "" {
			eq[k] = v
		}
	}
	win := "[" + promDur(until.Sub(since)) + "]"
	by := "max by (" + strings.Join(usageLabels, ", ") + ") "
	over := func(fn, rule string) string { return by + "(" + fn + "(" + sel(rule, eq, "", "") + win + "))" }
	qs := map[string]string{
		"count": over("count_over_time", rCPUs), "cores": over("max_over_time", rCPUs),
		"first": over("min_over_time", rScrapeTime), "last": over("max_over_time", rScrapeTime),
		"gpus": over("max_over_time", rGPUs), "gpu_util": over("avg_over_time", rGPUUtil),
		"mem": over("max_over_time", rMemPeakRatio), "mem_limit": over("max_over_time", rMemLimit),
		"oom": over("max_over_time", rOOMKills),
	}
	// Counters never go back within a job: their smallest value in the
	// period is the one at the job's first sample in it, the largest the
	// one at its last.
	for i, rule := range usageCounterRules {
		qs[usageCounters[i]+"_first"] = over("min_over_time", rule)
		qs[usageCounters[i]+"_last"] = over("max_over_time", rule)
	}
	res, err := r.vectors(ctx, until, qs)
	if err != nil {
		return nil, err
	}
	var untimed int
	u.Jobs, untimed = usageJobs(res, since, u.RuleInterval, r.cfg.Thresholds)
	if untimed > 0 {
		u.Notes = append(u.Notes, fmt.Sprintf("%d jobs have no %s (the rules Prometheus runs are older than "+
			"contrib/prometheus/%s): their time is counted from samples, and their CPU, energy and emissions "+
			"from their first sample in the period.", untimed, rScrapeTime, usageRulesFile))
	}
	u.Totals, u.Warnings = usageTotals(u.Jobs)
	if len(u.Jobs) == 0 {
		u.Notes = append(u.Notes, fmt.Sprintf("No job summaries (%s) match in this period: no jobs, or the "+
			"jobscope-usage rules are not loaded in this Prometheus.", rCPUs))
	}
	return u, nil
}

func usageKey(m model.Metric) string {
	parts := make([]string, len(usageLabels))
	for i, l := range usageLabels {
		parts[i] = string(m[model.LabelName(l)])
	}
	return strings.Join(parts, "\x00")
}

func byUsageKey(v model.Vector) map[string]float64 {
	out := make(map[string]float64, len(v))
	for _, s := range v {
		out[usageKey(s.Metric)] = float64(s.Value)
	}
	return out
}

// usageCounters are the counters a usage report takes the gain of over a
// job's window; usageCounterRules record them, in the same order.
var (
	usageCounters     = [3]string{"cpu", "energy", "emissions"}
	usageCounterRules = [3]string{rCPUUsed, rEnergy, rEmissions}
)

// usageSpan is the window of a job the period covers, as the job report
// defines it: from the job's start (its job_key's time) when that lies in
// the period, so counters count from 0, else from its first sample in the
// period; to its last sample in the period. Allocated and used time both
// come from this one window. It is kept apart from the figures so that the
// parts of a job recorded under two label sets can be joined first.
type usageSpan struct {
	timed      bool    // start and end are sample times (else dur counts samples)
	start, end float64 // unix seconds
	dur        float64 // seconds, for spans without sample times
	first      [3]*float64
	last       [3]*float64
}

func (s usageSpan) seconds() float64 {
	if s.timed {
		// To Prometheus's millisecond: unix seconds in a float64 leave
		// noise below it.
		return math.Round((s.end-s.start)*1000) / 1000
	}
	return s.dur
}

// join adds another part of the same job: the window runs from the
// earlier start to the later end, and counters from their smallest value
// (the earliest, as they never go back) to their largest.
func (s usageSpan) join(o usageSpan) usageSpan {
	minp := func(a, b *float64) *float64 {
		if a == nil || b != nil && *b < *a {
			return b
		}
		return a
	}
	if s.timed && o.timed {
		s.start, s.end = min(s.start, o.start), max(s.end, o.end)
	} else {
		s.timed, s.dur = false, s.seconds()+o.seconds()
	}
	for i := range s.first {
		s.first[i], s.last[i] = minp(s.first[i], o.first[i]), maxp(s.last[i], o.last[i])
	}
	return s
}

func maxp(a, b *float64) *float64 {
	if a == nil || b != nil && *b > *a {
		return b
	}
	return a
}

// usageJobs builds the jobs from the query results; untimed counts those
// without scrape times (rules older than job:slurm_job_scrape_timestamp_seconds:max).
func usageJobs(res map[string]model.Vector, since time.Time, interval float64, t Thresholds) (jobs []UsageJob, untimed int) {
	m := map[string]map[string]float64{}
	for name, v := range res {
		m[name] = byUsageKey(v)
	}
	var spans []usageSpan
	for _, s := range res["count"] {
		k := usageKey(s.Metric)
		lab := func(l string) string { return string(s.Metric[model.LabelName(l)]) }
		j := UsageJob{ID: lab(lJobID), Key: lab(lJobKey), Cluster: lab(lClust), User: lab(lUser),
			Account: lab(lAcct), Partition: lab(lPart), Cores: m["cores"][k], GPUs: m["gpus"][k],
			GPUUtilization: get(m["gpu_util"], k), MemoryPeakRatio: get(m["mem"], k),
			MemoryRequestedBytes: get(m["mem_limit"], k), OOMKills: get(m["oom"], k)}
		var sp usageSpan
		for i, c := range usageCounters {
			sp.first[i], sp.last[i] = get(m[c+"_first"], k), get(m[c+"_last"], k)
		}
		first, okF := m["first"][k]
		last, okL := m["last"][k]
		switch {
		case okF && okL:
			sp.timed, sp.start, sp.end = true, first, last
			// The counters start with the job's cgroup: from a start in
			// the period they count the whole job, whenever jobscope began
			// to see it.
			fromZero := false
			if t0, ok := keyStart(j.Key, j.ID); ok && !t0.Before(since) && float64(t0.Unix()) <= first {
				sp.start, fromZero = float64(t0.Unix()), true
			} else if sub, ok := sluidSubmitted(j.Key); ok && !sub.Before(since) && float64(sub.Unix()) <= first {
				// Slurm 26.05's job_key is the SLUID, which holds the
				// submission, not the start: a job submitted in the period
				// started in it, so its counters count from 0, but its
				// window starts at its first sample (the start is not in
				// any recorded series).
				fromZero = true
			}
			if fromZero {
				for i := range sp.first {
					if sp.last[i] != nil {
						sp.first[i] = ptr(0)
					}
				}
			}
		default:
			sp.dur = float64(s.Value) * interval
			untimed++
		}
		jobs, spans = append(jobs, j), append(spans, sp)
	}
	jobs, spans = foldUnkeyed(jobs, spans)
	for i := range jobs {
		usageFigures(&jobs[i], spans[i])
		jobs[i].Warnings = usageWarnings(jobs[i], t)
	}
	sort.Slice(jobs, func(i, k int) bool {
		if jobs[i].CoreHours != jobs[k].CoreHours {
			return jobs[i].CoreHours > jobs[k].CoreHours
		}
		return jobs[i].Key < jobs[k].Key
	})
	return jobs, untimed
}

// usageFigures fills a job's time and counter figures from its window:
// allocated = cores (GPUs) x the window, used = the counters' gain in it.
func usageFigures(j *UsageJob, sp usageSpan) {
	gain := func(i int) *float64 {
		if sp.first[i] == nil || sp.last[i] == nil {
			return nil
		}
		return ptr(*sp.last[i] - *sp.first[i])
	}
	j.ObservedSeconds = sp.seconds()
	j.CoreHours = j.Cores * j.ObservedSeconds / 3600
	j.GPUHours = j.GPUs * j.ObservedSeconds / 3600
	if c := gain(0); c != nil {
		j.CPUHoursUsed = ptr(*c / 3600)
		if j.CoreHours > 0 {
			j.CPUEfficiency = ptr(*j.CPUHoursUsed / j.CoreHours)
		}
	}
	if e := gain(1); e != nil {
		j.EnergyKWh = ptr(*e / 3.6e6)
	}
	j.EmissionsGrams = gain(2)
}

// foldUnkeyed joins the summaries a job got before it had a job_key (its
// first scrapes, before discovery knew its start) to the job's keyed ones:
// same cluster and id, and one keyed job of that id in the period (with
// several, a reused id, the unkeyed part stays on its own).
func foldUnkeyed(jobs []UsageJob, spans []usageSpan) ([]UsageJob, []usageSpan) {
	keyed := map[string][]int{}
	for i, j := range jobs {
		if j.Key != "" {
			keyed[j.Cluster+"/"+j.ID] = append(keyed[j.Cluster+"/"+j.ID], i)
		}
	}
	var out []UsageJob
	var outSpans []usageSpan
	for i, u := range jobs {
		idx := keyed[u.Cluster+"/"+u.ID]
		if u.Key != "" || len(idx) != 1 {
			continue
		}
		k := &jobs[idx[0]]
		spans[idx[0]] = spans[idx[0]].join(spans[i])
		k.Cores, k.GPUs = max(k.Cores, u.Cores), max(k.GPUs, u.GPUs)
		k.MemoryPeakRatio = maxp(k.MemoryPeakRatio, u.MemoryPeakRatio)
		k.MemoryRequestedBytes = maxp(k.MemoryRequestedBytes, u.MemoryRequestedBytes)
		k.OOMKills = maxp(k.OOMKills, u.OOMKills)
	}
	for i, j := range jobs {
		if j.Key != "" || len(keyed[j.Cluster+"/"+j.ID]) != 1 {
			out, outSpans = append(out, j), append(outSpans, spans[i])
		}
	}
	return out, outSpans
}

// usageWarnings applies the job report's thresholds to what the summary
// series keep: efficiencies, the memory peak ratio, OOM kills, mean GPU use.
func usageWarnings(j UsageJob, t Thresholds) []string {
	w := []string{}
	long := j.ObservedSeconds >= time.Duration(t.MinElapsed).Seconds()
	oom := deref(j.OOMKills) > 0
	if oom {
		w = append(w, wOOM)
	}
	if e := j.CPUEfficiency; e != nil && long {
		if *e < t.CPUEfficiencyVeryLow {
			w = append(w, wCPUVeryLow)
		} else if *e < t.CPUEfficiencyLow {
			w = append(w, wCPULow)
		}
	}
	if r := j.MemoryPeakRatio; r != nil && !oom {
		if *r >= t.MemoryHigh {
			w = append(w, wMemHigh)
		} else if long && *r < t.MemoryLow && deref(j.MemoryRequestedBytes) >= t.MemoryLowMinRequest {
			w = append(w, wMemLow)
		}
	}
	if u := j.GPUUtilization; u != nil && long && j.GPUs > 0 {
		if *u <= t.GPUIdleUtilization {
			w = append(w, wGPUIdle)
		} else if *u <= t.GPUUtilizationLow {
			w = append(w, wGPULow)
		}
	}
	return w
}

func usageTotals(jobs []UsageJob) (UsageTotals, []WarningCount) {
	var t UsageTotals
	var used, gpuBusy, memSum, kwh, grams float64
	var haveUsed, haveGPU, haveEnergy, haveGrams bool
	memN := 0
	counts := map[string]int{}
	for _, j := range jobs {
		t.Jobs++
		t.CoreHours += j.CoreHours
		t.GPUHours += j.GPUHours
		t.ObservedSecondsMean += j.ObservedSeconds
		if j.CPUHoursUsed != nil {
			used, haveUsed = used+*j.CPUHoursUsed, true
		}
		if j.GPUUtilization != nil {
			gpuBusy, haveGPU = gpuBusy+*j.GPUUtilization*j.GPUHours, true
		}
		if j.MemoryPeakRatio != nil {
			memSum += *j.MemoryPeakRatio
			memN++
		}
		if j.EnergyKWh != nil {
			kwh, haveEnergy = kwh+*j.EnergyKWh, true
		}
		if j.EmissionsGrams != nil {
			grams, haveGrams = grams+*j.EmissionsGrams, true
		}
		if deref(j.OOMKills) > 0 {
			t.OOMKilledJobs++
		}
		if len(j.Warnings) > 0 {
			t.JobsWithWarnings++
		}
		for _, w := range j.Warnings {
			counts[w]++
		}
	}
	if t.Jobs > 0 {
		t.ObservedSecondsMean /= float64(t.Jobs)
	}
	if haveUsed {
		t.CPUHoursUsed = ptr(used)
		if t.CoreHours > 0 {
			t.CPUEfficiency = ptr(used / t.CoreHours)
		}
	}
	if haveGPU && t.GPUHours > 0 {
		t.GPUUtilization = ptr(gpuBusy / t.GPUHours)
	}
	if memN > 0 {
		t.MemoryPeakRatioMean = ptr(memSum / float64(memN))
	}
	if haveEnergy {
		t.EnergyKWh = ptr(kwh)
	}
	if haveGrams {
		t.EmissionsGrams = ptr(grams)
	}
	wc := []WarningCount{}
	for id, n := range counts {
		wc = append(wc, WarningCount{ID: id, Severity: warningSeverity[id], Title: warningTitle[id], Jobs: n})
	}
	sort.Slice(wc, func(i, k int) bool {
		if wc[i].Jobs != wc[k].Jobs {
			return wc[i].Jobs > wc[k].Jobs
		}
		return wc[i].ID < wc[k].ID
	})
	return t, wc
}
