// SPDX-License-Identifier: Apache-2.0

package service

import (
	"bytes"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/jobscope/jobscope/cmd/jobscope-report/report"
	"github.com/jobscope/jobscope/internal/mungeauth"
)

// notOwner is a CurrentUser no Slurm user equals: the report then keeps
// the job's executables to itself (they are the owner's only).
const notOwner = "#not-the-owner"

// job renders one job's report in the format asked, with the same code
// as the local report.
func (s *Server) job(w http.ResponseWriter, r *http.Request, c Caller) {
	id, q := r.PathValue("id"), r.URL.Query()
	format := q.Get("format")
	if format == "" {
		format = "text"
	}
	if format != "text" && format != "json" && format != "html" {
		s.refuse(w, &Refusal{400, reasonBadRequest, fmt.Sprintf("--format %q: want text, json or html", format)})
		return
	}
	acc, err := s.access.MayReadJob(r.Context(), c, id)
	if err != nil {
		s.refuse(w, asRefusal(err))
		return
	}
	cfg := s.cfg.Report
	if acc.Cluster != "" {
		cfg.Cluster = acc.Cluster
	}
	o := report.Options{Config: cfg, JobKey: q.Get("job_key"), Reused: q.Get("reused"),
		Ended: q.Get("ended") == "1", Transport: s.Transport, Now: s.Now, CurrentUser: notOwner}
	if acc.Owner {
		o.CurrentUser = c.Name
	}
	if o.Reused == "" {
		o.Reused = "ask"
	}
	rep, err := report.JobReport(r.Context(), o, id)
	if err != nil {
		s.reportFailed(w, err)
		return
	}
	var buf bytes.Buffer
	switch format {
	case "json":
		err = report.WriteJSON(&buf, rep)
	case "html":
		err = report.WriteHTML(&buf, rep, time.Local)
	default:
		err = report.WriteText(&buf, rep, time.Local, q.Get("color") == "1")
	}
	s.answer(w, format, buf.Bytes(), err)
}

// usage renders a usage summary the caller may read.
func (s *Server) usage(w http.ResponseWriter, r *http.Request, c Caller) {
	q := r.URL.Query()
	f := report.UsageFilter{User: q.Get("user"), Account: q.Get("account"), Partition: q.Get("partition")}
	format := q.Get("format")
	if format == "" {
		format = "text"
	}
	if format != "text" && format != "json" && format != "csv" {
		s.refuse(w, &Refusal{400, reasonBadRequest, fmt.Sprintf("--format %q: want text, json or csv", format)})
		return
	}
	if f.User == "" && f.Account == "" && f.Partition == "" {
		s.refuse(w, &Refusal{400, reasonBadRequest, "give --user, --account or --partition"})
		return
	}
	if err := s.access.MayReadUsage(c, f.User, f.Account, f.Partition); err != nil {
		s.refuse(w, asRefusal(err))
		return
	}
	now := s.now()
	until := now
	var err error
	if v := q.Get("until"); v != "" {
		if until, err = report.ParseWhen(v, now, time.Local); err != nil {
			s.refuse(w, &Refusal{400, reasonBadRequest, "--until: " + err.Error()})
			return
		}
	}
	sinceArg := q.Get("since")
	if sinceArg == "" {
		sinceArg = "30d"
	}
	since, err := report.ParseWhen(sinceArg, until, time.Local)
	if err != nil {
		s.refuse(w, &Refusal{400, reasonBadRequest, "--since: " + err.Error()})
		return
	}
	cfg := s.cfg.Report
	if n, err := strconv.Atoi(q.Get("jobs")); err == nil && n > 0 && n <= 1000 {
		cfg.Usage.Jobs = n
	}
	u, err := report.UsageReport(r.Context(), report.Options{Config: cfg, Transport: s.Transport, Now: s.Now},
		f, since, until)
	if err != nil {
		s.reportFailed(w, err)
		return
	}
	var buf bytes.Buffer
	switch format {
	case "json":
		err = report.WriteJSON(&buf, u)
	case "csv":
		err = report.WriteUsageCSV(&buf, u)
	default:
		err = report.WriteUsageText(&buf, u, time.Local, q.Get("color") == "1", cfg.Usage.Jobs)
	}
	s.answer(w, format, buf.Bytes(), err)
}

// reportFailed answers a report that could not be made, with the local
// report's exit status (unknown job, ambiguous id, Prometheus down).
func (s *Server) reportFailed(w http.ResponseWriter, err error) {
	status := http.StatusBadGateway
	switch report.ExitFor(err) {
	case report.ExitAmbiguous:
		status = http.StatusConflict
	case report.ExitUsage:
		status = http.StatusBadRequest
	}
	s.refuse(w, &Refusal{status, reasonReportError, err.Error()})
}

var contentTypes = map[string]string{
	"text": "text/plain; charset=utf-8", "json": "application/json", "csv": "text/csv; charset=utf-8",
	"html": "text/html; charset=utf-8",
}

func (s *Server) answer(w http.ResponseWriter, format string, body []byte, err error) {
	if err != nil {
		s.refuse(w, &Refusal{500, reasonReportError, err.Error()})
		return
	}
	s.decide("allowed", mungeauth.ReasonOK, "")
	w.Header().Set("Content-Type", contentTypes[format])
	w.Header().Set("X-Content-Type-Options", "nosniff")
	// A report page holds the user's data: no cache keeps it.
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(body)
}
