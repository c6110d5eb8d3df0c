// SPDX-License-Identifier: Apache-2.0

package service

import (
	"bytes"
	"html/template"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"time"

	"github.com/jobscope/jobscope/slurmcli"
)

// maxPageJobs bounds the job list (a user with a million array tasks
// gets the latest ones).
const maxPageJobs = 200

// pageJob is one line of the recent-jobs page.
type pageJob struct {
	ID, Name, State, Elapsed, Efficiency string
	Link                                 string
	Warnings                             []string
}

// html/template escapes every field (job names are the user's text).
var pageTmpl = template.Must(template.New("page").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>jobscope: {{.User}}'s recent jobs</title>
<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}td,th{padding:.3em .8em;
border-bottom:1px solid #ddd;text-align:left}.w{color:#a60}</style></head><body>
<h1>Recent jobs of {{.User}}</h1><p>The last {{.Days}} days, from Slurm accounting. Click a job for its report.</p>
{{if .Note}}<p>{{.Note}}</p>{{end}}
<table><tr><th>Job</th><th>Name</th><th>State</th><th>Elapsed</th><th>CPU efficiency</th><th>Warnings</th></tr>
{{range .Jobs}}<tr><td><a href="{{.Link}}">{{.ID}}</a></td><td>{{.Name}}</td><td>{{.State}}</td><td>{{.Elapsed}}</td>
<td>{{.Efficiency}}</td><td class="w">{{range .Warnings}}{{.}}<br>{{end}}</td></tr>
{{else}}<tr><td colspan="6">No jobs.</td></tr>{{end}}</table></body></html>
`))

// page lists the caller's recent jobs with their CPU efficiency and the
// warnings sacct alone can give; each links to the job's HTML report.
func (s *Server) page(w http.ResponseWriter, r *http.Request, c Caller) {
	since := s.now().Add(-time.Duration(s.cfg.RecentDays) * 24 * time.Hour)
	data := struct {
		User, Note string
		Days       int
		Jobs       []pageJob
	}{User: c.Name, Days: s.cfg.RecentDays}
	recs, err := slurmcli.SacctUserRecords(r.Context(), s.access.Slurm, c.Name, s.cfg.Report.Cluster, since, time.Local)
	if err != nil && !slurmcli.Partial(err) {
		s.refuse(w, &Refusal{503, reasonSlurm, "Slurm accounting (sacct) did not answer"})
		return
	}
	if err != nil {
		data.Note = "Some of Slurm's records could not be read and are left out."
	}
	sort.SliceStable(recs, func(i, j int) bool { return recs[i].Submit.After(recs[j].Submit) })
	if len(recs) > maxPageJobs {
		recs = recs[:maxPageJobs]
		data.Note = "Only the latest jobs are listed."
	}
	for _, rec := range recs {
		data.Jobs = append(data.Jobs, s.pageJob(rec))
	}
	var buf bytes.Buffer
	if err := pageTmpl.Execute(&buf, data); err != nil {
		s.refuse(w, &Refusal{500, reasonReportError, err.Error()})
		return
	}
	s.answer(w, "html", buf.Bytes(), nil)
}

func (s *Server) pageJob(rec slurmcli.SacctRecord) pageJob {
	j := pageJob{ID: rec.ID, Name: rec.Name, State: rec.State, Elapsed: rec.Elapsed.String(), Efficiency: "-",
		Link: "/v1/job/" + url.PathEscape(rec.ID) + "?format=html"}
	t := s.cfg.Report.Thresholds
	if rec.CPUTimeRaw > 0 && !rec.Running() {
		eff := rec.TotalCPU.Seconds() / rec.CPUTimeRaw
		j.Efficiency = formatPct(eff)
		if rec.Elapsed >= time.Duration(t.MinElapsed) && eff < t.CPUEfficiencyLow {
			j.Warnings = append(j.Warnings, "low CPU efficiency: ask for fewer cores")
		}
	}
	switch rec.State {
	case "OUT_OF_MEMORY":
		j.Warnings = append(j.Warnings, "ran out of memory: ask for more (--mem)")
	case "TIMEOUT":
		j.Warnings = append(j.Warnings, "hit its time limit")
	}
	if rec.TimeLimit > 0 && rec.State == "COMPLETED" && rec.Elapsed.Seconds() < t.TimeLimitUsed*rec.TimeLimit.Seconds() {
		j.Warnings = append(j.Warnings, "used little of its time limit: a shorter one starts sooner")
	}
	return j
}

func formatPct(f float64) string { return strconv.FormatFloat(f*100, 'f', 0, 64) + "%" }
