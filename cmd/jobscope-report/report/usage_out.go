// SPDX-License-Identifier: Apache-2.0

package report

import (
	"encoding/csv"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// WriteUsageText renders a usage summary in at most Width columns, listing
// up to maxJobs jobs (most core-hours first).
func WriteUsageText(w io.Writer, u *Usage, loc *time.Location, color bool, maxJobs int) error {
	t := &textWriter{w: w, color: color}
	var who []string
	for _, p := range [][2]string{{"user", u.Filter.User}, {"account", u.Filter.Account},
		{"partition", u.Filter.Partition}, {"cluster", u.Filter.Cluster}} {
		if p[1] != "" {
			who = append(who, p[0]+" "+p[1])
		}
	}
	if len(who) == 0 {
		who = []string{"all jobs"}
	}
	t.out(bold(clip("Usage of "+strings.Join(who, ", "), Width)))
	t.field("Period", when(u.Since, loc)+" to "+when(u.Until, loc)+" ("+fmtDuration(u.Until.Sub(u.Since).Seconds())+")")
	tot := u.Totals
	t.field("Jobs", num(float64(tot.Jobs)), plural(float64(tot.JobsWithWarnings), "one", "with warnings", "with warnings"))
	cpu := fmt.Sprintf("%s core-hours allocated", fixed(tot.CoreHours))
	if tot.CPUHoursUsed != nil {
		cpu += fmt.Sprintf(", %s used", fixed(*tot.CPUHoursUsed))
	}
	t.field("CPU", cpu, optPct("efficiency ", tot.CPUEfficiency))
	if tot.GPUHours > 0 {
		t.field("GPU", fixed(tot.GPUHours)+" GPU-hours", optPct("busy ", tot.GPUUtilization))
	}
	t.field("Memory", optPct("peak at ", tot.MemoryPeakRatioMean)+map[bool]string{true: " of the request (mean of jobs)"}[tot.MemoryPeakRatioMean != nil],
		plural(float64(tot.OOMKilledJobs), "one", "job OOM-killed", "jobs OOM-killed"))
	if tot.EnergyKWh != nil {
		t.field("Energy", fmt.Sprintf("%.3g kWh", *tot.EnergyKWh), optNum("", tot.EmissionsGrams, " gCO2e"))
	}
	t.line("")
	if len(u.Warnings) > 0 {
		t.out(bold("Most frequent warnings"))
		for _, wc := range u.Warnings {
			jobs := map[bool]string{true: "job ", false: "jobs"}[wc.Jobs == 1]
			t.out(plain(fmt.Sprintf("  %6d %s  ", wc.Jobs, jobs)), severity(wc.Severity), plain(fmt.Sprintf(" %-27s %s", wc.ID, clip(wc.Title, 40))))
		}
		t.line("")
	}
	if len(u.Jobs) > 0 {
		n := min(len(u.Jobs), maxJobs)
		t.out(bold(fmt.Sprintf("Jobs (%d of %d, most core-hours first)", n, len(u.Jobs))))
		t.line(fmt.Sprintf("  %-12s %-12s %-12s %-12s %6s %9s %8s %8s %8s", "job", "user", "account", "partition",
			"cores", "core-h", "CPU eff", "mem", "GPU-h"))
		for _, j := range u.Jobs[:n] {
			t.line(fmt.Sprintf("  %-12s %-12s %-12s %-12s %6s %9s %8s %8s %8s", clip(j.ID, 12), clip(j.User, 12),
				clip(j.Account, 12), clip(j.Partition, 12), num(j.Cores), fixed(j.CoreHours), pctOr(j.CPUEfficiency),
				pctOr(j.MemoryPeakRatio), fixed(j.GPUHours)))
			if len(j.Warnings) > 0 {
				for _, l := range wrap(strings.Join(j.Warnings, ", "), Width-16) {
					t.line(strings.Repeat(" ", 14) + l)
				}
			}
		}
	}
	for _, note := range u.Notes {
		t.line("")
		for i, l := range wrap(note, Width-4) {
			t.line(map[bool]string{true: "  - ", false: "    "}[i == 0] + l)
		}
	}
	return t.err
}

// fixed renders hours with two decimals (three under 1).
func fixed(h float64) string {
	if h != 0 && h < 1 {
		return strconv.FormatFloat(h, 'f', 3, 64)
	}
	return strconv.FormatFloat(h, 'f', 2, 64)
}

// usageCSVHeader names the CSV columns; they match the JSON job fields.
var usageCSVHeader = []string{"id", "key", "cluster", "user", "account", "partition", "cores", "observed_seconds",
	"core_hours", "cpu_hours_used", "cpu_efficiency", "gpus", "gpu_hours", "gpu_utilization", "memory_peak_ratio",
	"memory_requested_bytes", "oom_kills", "energy_kwh", "emissions_grams", "warnings"}

// WriteUsageCSV writes one row per job; unknown figures are empty cells.
func WriteUsageCSV(w io.Writer, u *Usage) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(usageCSVHeader); err != nil {
		return err
	}
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', 10, 64) }
	p := func(v *float64) string {
		if v == nil {
			return ""
		}
		return f(*v)
	}
	for _, j := range u.Jobs {
		// Text cells come from labels a job's user may have chosen; the
		// numbers are ours (and "-1" must stay a number).
		c := csvSafe
		if err := cw.Write([]string{c(j.ID), c(j.Key), c(j.Cluster), c(j.User), c(j.Account), c(j.Partition), f(j.Cores),
			f(j.ObservedSeconds), f(j.CoreHours), p(j.CPUHoursUsed), p(j.CPUEfficiency), f(j.GPUs), f(j.GPUHours),
			p(j.GPUUtilization), p(j.MemoryPeakRatio), p(j.MemoryRequestedBytes), p(j.OOMKills), p(j.EnergyKWh),
			p(j.EmissionsGrams), c(strings.Join(j.Warnings, ";"))}); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}
