// SPDX-License-Identifier: Apache-2.0

package report

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/user"
	"strings"
	"time"

	"github.com/jobscope/jobscope/slurmcli"
)

// Options are one run's settings beyond the site configuration.
type Options struct {
	Config Config
	// JobKey picks one of several jobs that used an id.
	JobKey string
	// Reused: "ask" (the default) fails listing the jobs behind a reused
	// id; "latest" reports the latest and says so.
	Reused string
	// Ended says the job is over (an epilog knows it before slurmdbd and
	// Prometheus do): it is reported as ended at its last sample.
	Ended bool
	// Now is the time the report is made at (tests fix it).
	Now func() time.Time
	// Location is the zone times are printed in (default: local).
	Location *time.Location
	// Transport replaces the HTTP client built from the configuration.
	Transport http.RoundTripper
	// Slurm runs sacct; nil builds one from the configuration.
	Slurm *slurmcli.Runner
	// CurrentUser owns the jobs whose private details (executable paths)
	// the report may show; empty asks the kernel (callerName).
	CurrentUser string
}

type runner struct {
	cfg   Config
	opts  Options
	prom  *prom
	slurm *slurmcli.Runner
	now   time.Time
	loc   *time.Location
	me    string
	// noCharts leaves out the charts' range queries (job summaries).
	noCharts bool
}

func newRunner(o Options) (*runner, error) {
	if err := o.Config.Validate(); err != nil {
		return nil, err
	}
	p, err := newProm(o.Config.Prometheus, o.Transport)
	if err != nil {
		return nil, err
	}
	r := &runner{cfg: o.Config, opts: o, prom: p, loc: o.Location, me: o.CurrentUser}
	if o.Now != nil {
		r.now = o.Now()
	} else {
		r.now = time.Now()
	}
	if r.loc == nil {
		r.loc = time.Local
	}
	if r.me == "" {
		r.me = callerName(os.Getuid(), user.LookupId)
	}
	if o.Config.Sacct != "never" {
		r.slurm = o.Slurm
		if r.slurm == nil {
			r.slurm = &slurmcli.Runner{Timeout: time.Duration(o.Config.Prometheus.Timeout)}
			if o.Config.SacctPath != "" {
				r.slurm.Paths = map[string]string{"sacct": o.Config.SacctPath}
			}
		}
	}
	return r, nil
}

// JobReport builds the report of one job id.
func JobReport(ctx context.Context, o Options, id string) (*Report, error) {
	r, err := newRunner(o)
	if err != nil {
		return nil, err
	}
	return r.job(ctx, id)
}

func (r *runner) job(ctx context.Context, id string) (*Report, error) {
	if err := validJobArg(id); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadInput, err)
	}
	raw, err := r.resolveArray(ctx, id)
	if err != nil {
		return nil, err
	}
	cands, err := r.candidates(ctx, raw)
	if err != nil {
		return nil, err
	}
	if len(cands) == 0 {
		return r.missing(ctx, raw)
	}
	c, others, notes, err := r.choose(raw, cands)
	if err != nil {
		return nil, err
	}
	interval := c.interval
	job, more, err := r.timeline(ctx, raw, c, interval)
	if err != nil {
		return nil, err
	}
	job.OtherJobsWithID = others
	if job.OtherJobsWithID == nil {
		job.OtherJobsWithID = []JobRef{}
	}
	rep := &Report{Schema: JobSchema, GeneratedAt: r.now, Job: job, Notes: append(notes, more...)}
	from := job.StartTime
	if c.first.Before(from) {
		from = c.first
	}
	s := newScope(raw, r.cfg.NodeLabel, c.nodes, from, c.last, interval)
	own := r.me != "" && r.me == job.User
	if err := r.figures(ctx, rep, s, own); err != nil {
		return nil, err
	}
	if rep.CPU.UsedSeconds == nil && rep.Memory.PeakBytes == nil {
		return nil, fmt.Errorf("%w: Prometheus has %s for job %s but no CPU or memory samples: is jobscope's "+
			"cgroup collector on for %s (jobscope_scrape_collector_success{collector=\"cgroup\"})?",
			ErrNoSamples, mInfo, raw, strings.Join(c.nodes, ", "))
	}
	if !r.noCharts {
		if rep.Charts, err = r.charts(ctx, rep, s, interval); err != nil {
			return nil, err
		}
	}
	rep.Warnings = warnings(rep, r.cfg.Thresholds, r.cfg.HelpURL)
	if !own && r.me != "" {
		rep.Notes = append(rep.Notes, "Executables are shown to the job's owner only.")
	}
	if rep.Warnings == nil {
		rep.Warnings = []Warning{}
	}
	if rep.Notes == nil {
		rep.Notes = []string{}
	}
	return rep, nil
}

// resolveArray turns an array task written 123_4 into the raw job id the
// exporter labels its series with.
func (r *runner) resolveArray(ctx context.Context, id string) (string, error) {
	a, t, ok := strings.Cut(id, "_")
	if !ok {
		return id, nil
	}
	eq := map[string]string{"array_job_id": a, "array_task_id": t}
	if r.cfg.Cluster != "" {
		eq[lClust] = r.cfg.Cluster
	}
	sets, err := r.prom.series(ctx, sel(mInfo, eq, "", ""), r.now.Add(-time.Duration(r.cfg.Lookback)), r.now)
	if err != nil {
		return "", err
	}
	for _, ls := range sets {
		if raw := string(ls[lJobID]); raw != "" {
			return raw, nil
		}
	}
	return "", fmt.Errorf("%w: array task %s: Prometheus has no %s in the last %s",
		ErrUnknownJob, id, sel(mInfo, eq, "", ""), r.cfg.Lookback)
}
