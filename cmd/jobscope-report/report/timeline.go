// SPDX-License-Identifier: Apache-2.0

package report

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"time"

	"github.com/jobscope/jobscope/slurmcli"
)

// sacctRecords asks sacct about a job id when the configuration allows it.
// With sacct=auto a missing or failing sacct only costs a note.
func (r *runner) sacctRecords(ctx context.Context, id, cluster string) ([]slurmcli.SacctRecord, string, error) {
	if r.slurm == nil {
		return nil, "", nil
	}
	if r.cfg.Sacct == "auto" && !onPath(r.slurm.Path("sacct")) {
		return nil, "", nil
	}
	recs, err := slurmcli.SacctRecords(ctx, r.slurm, id, cluster, r.loc)
	if slurmcli.Partial(err) {
		// The records sacct printed well are used; those left out (a job
		// name made to look like sacct's output) are only noted.
		return recs, "sacct printed records that could not be read or name a job twice; they were left out.", nil
	}
	if err != nil {
		if r.cfg.Sacct == "always" {
			return nil, "", &sacctError{msg: fmt.Sprintf("job %s: %s", id, sacctTrouble(err)), err: err}
		}
		return nil, sacctTrouble(err) + "; submit time, time limit and final state are unknown.", nil
	}
	return recs, "", nil
}

// onPath reports whether name is an executable found on $PATH (or a path
// to one).
func onPath(name string) bool {
	_, err := exec.LookPath(name)
	return err == nil
}

// matchSacct picks the sacct record of the job Prometheus saw: same
// cluster, started before its first sample and not ended before it.
func matchSacct(recs []slurmcli.SacctRecord, c *candidate, est time.Time) *slurmcli.SacctRecord {
	const slack = 10 * time.Minute
	var best *slurmcli.SacctRecord
	var bestGap time.Duration
	for i := range recs {
		rec := &recs[i]
		if rec.Start.IsZero() || (c.labels[lClust] != "" && rec.Cluster != "" && rec.Cluster != c.labels[lClust]) {
			continue
		}
		if rec.Start.After(c.first.Add(slack)) || (!rec.End.IsZero() && rec.End.Before(c.first.Add(-slack))) {
			continue
		}
		gap := rec.Start.Sub(est).Abs()
		if best == nil || gap < bestGap {
			best, bestGap = rec, gap
		}
	}
	return best
}

// timeline fills the job's identity and times: sacct where it answered,
// then the start time in the job_key, then the samples themselves.
func (r *runner) timeline(ctx context.Context, id string, c *candidate, interval time.Duration) (Job, []string, error) {
	j := Job{
		ID: id, Key: c.key, Cluster: c.labels[lClust], User: c.labels[lUser], Account: c.labels[lAcct],
		Partition: c.labels[lPart], QOS: c.labels["qos"], Name: c.labels["name"],
		ArrayJobID: c.labels["array_job_id"], ArrayTaskID: c.labels["array_task_id"], Nodes: c.nodes,
		FirstSample: c.first, LastSample: c.last, ScrapeInterval: interval.Seconds(), Running: c.running,
		StartTime: c.first, StartSource: "first_sample",
	}
	var notes []string
	if t, ok := keyStart(c.key, id); ok && !t.After(c.first) {
		j.StartTime, j.StartSource = t, "job_key"
	}
	recs, note, err := r.sacctRecords(ctx, id, j.Cluster)
	if err != nil {
		return j, nil, err
	}
	if note != "" {
		notes = append(notes, note)
	}
	if rec := matchSacct(recs, c, j.StartTime); rec != nil {
		j.StartTime, j.StartSource = rec.Start, "sacct"
		j.State, j.ExitCode = rec.State, rec.ExitCode
		j.Running = rec.Running()
		if !rec.Submit.IsZero() {
			sub := rec.Submit
			j.SubmitTime = &sub
			j.WaitSeconds = ptr(rec.Start.Sub(rec.Submit).Seconds())
		}
		if rec.TimeLimit > 0 {
			j.TimeLimitSeconds = ptr(rec.TimeLimit.Seconds())
		}
		if !rec.End.IsZero() {
			end := rec.End
			j.EndTime, j.EndSource = &end, "sacct"
		}
		if j.Name == "" {
			j.Name = rec.Name
		}
		// Owner and account are Slurm's where sacct answers: the labels
		// may come from the job's own environment (DESIGN: Trust and
		// identity), so a label never names the owner against Slurm.
		if rec.User != "" && rec.User != j.User {
			if j.User != "" {
				notes = append(notes, "The metrics' user label ("+termSafe(j.User)+") disagrees with Slurm "+
					"accounting; the owner shown is Slurm's.")
			}
			j.User = rec.User
		}
		if rec.Account != "" {
			j.Account = rec.Account
		}
		if j.Partition == "" {
			j.Partition = rec.Partition
		}
	} else if len(recs) > 0 {
		notes = append(notes, "sacct lists job "+id+" but none of its records matches the job Prometheus saw.")
	}
	if r.opts.Ended && j.Running {
		j.Running = false
		if j.State == "RUNNING" {
			j.State = "ENDED"
		}
	}
	switch {
	case j.EndTime != nil:
	case j.Running:
		j.EndSource = "running"
	default:
		end := c.last
		j.EndTime, j.EndSource = &end, "last_sample"
	}
	if j.State == "" {
		j.State = map[bool]string{true: "RUNNING", false: "ENDED"}[j.Running]
	}
	endOrNow := r.now
	if j.EndTime != nil {
		endOrNow = *j.EndTime
	}
	j.ElapsedSeconds = endOrNow.Sub(j.StartTime).Seconds()
	j.ObservedSeconds = c.last.Sub(j.StartTime).Seconds()
	if j.ObservedSeconds <= 0 {
		return j, nil, fmt.Errorf("%w: job %s has a single sample (%s): nothing to measure yet",
			ErrNoSamples, id, c.last.UTC().Format(time.RFC3339))
	}
	if gap := c.first.Sub(j.StartTime); gap > 2*interval+time.Minute && j.StartSource != "first_sample" {
		notes = append(notes, fmt.Sprintf("Prometheus has no samples of the first %s of the job (not yet scraped, "+
			"or beyond retention): totals cover the whole job, the charts start later.", fmtDuration(gap.Seconds())))
	}
	return j, notes, nil
}

// notFound explains a job id Prometheus does not know.
func (r *runner) notFound(ctx context.Context, id string) error {
	recs, note, err := r.sacctRecords(ctx, id, r.cfg.Cluster)
	if err != nil {
		return err
	}
	for _, rec := range recs {
		if rec.Start.IsZero() {
			continue
		}
		return fmt.Errorf("%w: job %s ran on %s from %s (sacct: %s) but Prometheus has no samples of it in the "+
			"last %s: is jobscope running on those nodes, scraped by %s, and the job within its retention?",
			ErrNoSamples, id, orDash(rec.NodeList), rec.Start.Format(time.RFC3339), rec.State, r.cfg.Lookback, r.prom.url)
	}
	msg := fmt.Sprintf("job %s: Prometheus at %s has no %s in the last %s", id, r.prom.url,
		r.infoMatch(id, nil), r.cfg.Lookback)
	switch {
	case len(recs) > 0:
		msg += "; sacct lists it, but it never started"
	case r.slurm != nil && note == "":
		msg += ", and sacct does not know it"
	}
	if r.cfg.Cluster != "" {
		msg += " (cluster " + r.cfg.Cluster + ")"
	}
	return fmt.Errorf("%w: %s", ErrUnknownJob, msg)
}

// validJobArg accepts what Slurm calls a job id: digits, or an array
// task written 123_4 (resolved by slurm_job_info's array labels).
func validJobArg(s string) error {
	if s == "" || len(s) > 32 {
		return errors.New("empty or too long")
	}
	for _, c := range s {
		if (c < '0' || c > '9') && c != '_' {
			return fmt.Errorf("%q is not a Slurm job id (digits, or 123_4 for an array task)", s)
		}
	}
	if strings.HasPrefix(s, "_") || strings.HasSuffix(s, "_") || strings.Count(s, "_") > 1 {
		return fmt.Errorf("%q is not a Slurm job id", s)
	}
	return nil
}
