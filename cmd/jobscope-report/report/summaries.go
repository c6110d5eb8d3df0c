// SPDX-License-Identifier: Apache-2.0

package report

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/prometheus/common/model"
	"github.com/spf13/pflag"

	"github.com/jobscope/jobscope/internal/js1"
	"github.com/jobscope/jobscope/slurmcli"
)

// `jobscope report summaries` stores each finished job's JS1 summary in
// its AdminComment, through slurmdbd: one sacctmgr process takes a batch
// of "modify job" commands on stdin. A job's end costs slurmctld nothing
// (an EpilogSlurmctld that ran it per job would fork it, with a Prometheus
// query, for every job that ends, on the controller); a job the timer
// missed is caught by the next run's window.

// Causes a job is skipped or failed for: counted, and logged once each.
const (
	skipOther     = "comment_not_js1" // never overwritten
	skipHasJS1    = "has_summary"     // rewritten only with --refresh
	skipNotStart  = "never_started"
	skipNoSeries  = "no_series"     // Prometheus has nothing (retention, jobscope down, too short)
	skipMismatch  = "other_job"     // Prometheus' job with this id is someone else's
	failReport    = "report_failed" // Prometheus or sacct failed for it
	failEncode    = "encode_failed"
	failSacctmgr  = "sacctmgr_failed"
	failNotStored = "not_stored" // read back, the comment is not what was written
	// failLowercased: sacctmgr stored the summary in lower case, which
	// base64 does not survive; the run stops at the first such batch.
	failLowercased = "sacctmgr_lowercases"
)

// lowercasingSlurm says whether a `sacctmgr --version` answer ("slurm
// 22.05.8") names a Slurm whose sacctmgr lowercases AdminComment: 22.05's
// src/sacctmgr/job_functions.c reads it with strip_quotes(..., make_lower=1),
// and scontrol refuses to update a finished job (ESLURM_JOB_FINISHED), so
// such a Slurm has no way to store a JS1 summary after the job's end. Later
// versions are not known here: the writer's first batch holds one job and
// the run stops if it comes back lowercased.
func lowercasingSlurm(version string) bool {
	var major, minor int
	f := strings.Fields(version)
	if len(f) < 2 {
		return false
	}
	if _, err := fmt.Sscanf(f[1], "%d.%d", &major, &minor); err != nil {
		return false
	}
	return major < 23
}

// maxStdinLine is what sacctmgr reads of one command line without
// readline (a fixed buffer); a longer summary goes alone on the command line.
const maxStdinLine = 4000

// summaryTally is one run's counts, by cause.
type summaryTally struct {
	Written  int
	Skipped  map[string]int
	Failed   map[string]int
	Sacctmgr int // processes started
	logged   map[string]bool
	log      *slog.Logger
}

func (t *summaryTally) skip(cause, id string, err error) {
	t.note(t.Skipped, "skipped", cause, id, err)
}
func (t *summaryTally) fail(cause, id string, err error) { t.note(t.Failed, "failed", cause, id, err) }

// note counts a job and logs the first of each cause only: a thousand
// jobs past retention are one line, not a thousand.
func (t *summaryTally) note(m map[string]int, what, cause, id string, err error) {
	m[cause]++
	if t.logged[what+cause] {
		return
	}
	t.logged[what+cause] = true
	args := []any{"cause", cause, "job", id}
	if err != nil {
		args = append(args, "err", err.Error())
	}
	t.log.Info("summary "+what+" (first of this cause; the rest are counted)", args...)
}

func (t *summaryTally) String() string {
	list := func(m map[string]int) string {
		var n int
		keys := make([]string, 0, len(m))
		for k, v := range m {
			n += v
			keys = append(keys, fmt.Sprintf("%s=%d", k, v))
		}
		sort.Strings(keys)
		if n == 0 {
			return "0"
		}
		return fmt.Sprintf("%d (%s)", n, strings.Join(keys, " "))
	}
	return fmt.Sprintf("written %d, skipped %s, failed %s, sacctmgr processes %d", t.Written, list(t.Skipped),
		list(t.Failed), t.Sacctmgr)
}

// summaryWriter is the batch writer; summarize and readBack are the
// runner's in real use, fakes in tests.
type summaryWriter struct {
	slurm     *slurmcli.Runner
	batch     int
	dryRun    bool
	refresh   bool
	cluster   string
	out       io.Writer
	summarize func(ctx context.Context, rec slurmcli.CommentRecord) (*js1.Summary, string, error)
	readBack  func(ctx context.Context, ids []string) (map[string]string, error)
	tally     *summaryTally
	stop      bool // sacctmgr mangles what it stores: write no more
}

type pending struct{ id, comment string }

// write summarizes and stores the jobs of recs that need it.
func (w *summaryWriter) write(ctx context.Context, recs []slurmcli.CommentRecord) {
	var todo []pending
	for _, rec := range recs {
		switch js1.Classify(rec.AdminComment) {
		case js1.Other:
			w.tally.skip(skipOther, rec.ID, nil)
			continue
		case js1.JS1:
			if !w.refresh {
				w.tally.skip(skipHasJS1, rec.ID, nil)
				continue
			}
		}
		if rec.Start.IsZero() {
			w.tally.skip(skipNotStart, rec.ID, nil)
			continue
		}
		s, cause, err := w.summarize(ctx, rec)
		switch {
		case err != nil && (cause == skipNoSeries || cause == skipMismatch):
			// Nothing jobscope can summarize: not a failure of this run.
			w.tally.skip(cause, rec.ID, err)
			continue
		case err != nil:
			w.tally.fail(cause, rec.ID, err)
			continue
		}
		c, err := js1.Encode(s)
		if err != nil {
			w.tally.fail(failEncode, rec.ID, err)
			continue
		}
		todo = append(todo, pending{rec.ID, c})
	}
	// The first batch is one job: a sacctmgr that mangles the comment
	// costs one job, not a batch, before the run stops.
	first := true
	for len(todo) > 0 && !w.stop {
		n := min(len(todo), w.batch)
		if first && !w.dryRun {
			n, first = 1, false
		}
		w.store(ctx, todo[:n])
		todo = todo[n:]
	}
	for _, p := range todo {
		w.tally.fail(failLowercased, p.id, errors.New("not written: sacctmgr lowercases AdminComment"))
	}
}

// modifyCommand is one sacctmgr command. The comment is "JS1:" and base64
// (letters, digits, + / =), so single quotes hold it whole and nothing in
// it is read as sacctmgr syntax; the id is a checked job id.
func (w *summaryWriter) modifyCommand(p pending) []string {
	where := []string{"modify", "job", "where", "jobid=" + p.id}
	if w.cluster != "" {
		where = append(where, "cluster="+w.cluster)
	}
	return append(where, "set", "AdminComment='"+p.comment+"'")
}

func (w *summaryWriter) store(ctx context.Context, batch []pending) {
	if w.dryRun {
		for _, p := range batch {
			fmt.Fprintf(w.out, "%s\n", strings.Join(w.modifyCommand(p), " "))
		}
		w.tally.Written += len(batch)
		return
	}
	var stdin strings.Builder
	var inStdin []pending
	for _, p := range batch {
		line := strings.Join(w.modifyCommand(p), " ")
		if len(line) >= maxStdinLine {
			w.tally.Sacctmgr++
			if _, err := w.slurm.Run(ctx, "sacctmgr", append([]string{"-i"}, w.modifyCommand(p)...)...); err != nil {
				w.tally.fail(failSacctmgr, p.id, err)
				continue
			}
			inStdin = append(inStdin, p) // checked with the others
			continue
		}
		stdin.WriteString(line + "\n")
		inStdin = append(inStdin, p)
	}
	if stdin.Len() > 0 {
		w.tally.Sacctmgr++
		if _, err := w.slurm.RunInput(ctx, "sacctmgr", strings.NewReader(stdin.String()+"quit\n"), "-i"); err != nil {
			// Some commands may have run: reading back says which.
			w.tally.log.Warn("sacctmgr failed; reading back what it stored", "err", err.Error())
		}
	}
	if len(inStdin) == 0 {
		return
	}
	ids := make([]string, len(inStdin))
	for i, p := range inStdin {
		ids[i] = p.id
	}
	got, err := w.readBack(ctx, ids)
	for _, p := range inStdin {
		switch {
		case err != nil:
			w.tally.fail(failNotStored, p.id, err)
		case strings.TrimSpace(got[p.id]) == strings.ToLower(p.comment):
			w.stop = true
			w.tally.fail(failLowercased, p.id, errors.New("sacctmgr stored the summary in lower case"))
		case strings.TrimSpace(got[p.id]) != p.comment:
			w.tally.fail(failNotStored, p.id, errors.New("the AdminComment read back differs"))
		default:
			w.tally.Written++
		}
	}
}

// summarizeJob is the writer's summarize: the job's report from
// Prometheus (no charts), checked to be the job sacct names.
func (r *runner) summarizeJob(ctx context.Context, rec slurmcli.CommentRecord) (*js1.Summary, string, error) {
	rep, err := r.job(ctx, rec.ID)
	switch {
	case errors.Is(err, ErrUnknownJob) || errors.Is(err, ErrNoSamples):
		return nil, skipNoSeries, err
	case err != nil:
		return nil, failReport, err
	case rep.Job.StartSource == SourceSummary:
		// Only the old summary answered: nothing new to write.
		return nil, skipNoSeries, errors.New("no series of the job in Prometheus")
	case rep.Job.User != rec.User || rep.Job.Running:
		return nil, skipMismatch, fmt.Errorf("the job %s in Prometheus is %s's (running %v), sacct's %s's",
			rec.ID, rep.Job.User, rep.Job.Running, rec.User)
	}
	return toSummary(rep), "", nil
}

func (r *runner) readBack(ctx context.Context, ids []string) (map[string]string, error) {
	recs, err := slurmcli.SacctComments(ctx, r.slurm, slurmcli.CommentQuery{JobIDs: ids, Cluster: r.cfg.Cluster}, r.loc)
	if err != nil && !slurmcli.Partial(err) {
		return nil, err
	}
	out := make(map[string]string, len(recs))
	for _, rec := range recs {
		out[rec.ID] = rec.AdminComment
	}
	return out, nil
}

// summariesMain runs `jobscope report summaries`.
func summariesMain(ctx context.Context, args []string, stdout, stderr io.Writer, base Options) int {
	fs := pflag.NewFlagSet("jobscope report summaries", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	def := os.Getenv("JOBSCOPE_REPORT_CONFIG")
	if def == "" {
		def = DefaultConfigFile
	}
	config := fs.String("config", def, "Site configuration file (Prometheus, sacct).")
	url := fs.String("prometheus.url", "", "Prometheus base URL (default from the config file).")
	since := fs.String("since", "2h", "Jobs that ended this long ago or later.")
	batch := fs.Int("batch", 200, "Summaries written by one sacctmgr process.")
	dry := fs.Bool("dry-run", false, "Print the sacctmgr commands instead of running them.")
	refresh := fs.Bool("refresh", false, "Rewrite existing JS1 summaries too (never other comments).")
	sacctmgr := fs.String("sacctmgr", "", "Path of sacctmgr (default: on PATH).")
	cluster := fs.String("cluster", "", "Only jobs of this cluster.")
	fs.Usage = func() {
		fmt.Fprint(stderr, "Usage: jobscope report summaries [flags]\n\n"+
			"Stores each finished job's JS1 summary in its AdminComment through slurmdbd (docs/report.md).\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return ExitOK
		}
		return ExitUsage
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	usage := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "jobscope report summaries: "+format+"\n", a...)
		return ExitUsage
	}
	cfg, err := LoadConfig(*config, fs.Changed("config") || os.Getenv("JOBSCOPE_REPORT_CONFIG") != "")
	if err != nil {
		return usage("config: %v", err)
	}
	if *url != "" {
		cfg.Prometheus.URL = *url
	}
	if *cluster != "" {
		cfg.Cluster = *cluster
	}
	d, err := model.ParseDuration(*since)
	if err != nil || d <= 0 {
		return usage("--since %q: want a duration (2h, 1d)", *since)
	}
	if *batch < 1 || *batch > 10000 {
		return usage("--batch %d: want 1 to 10000", *batch)
	}
	if fs.NArg() > 0 {
		return usage("no arguments expected")
	}
	cfg.Sacct = "always" // the writer is nothing without sacct
	o := base
	o.Config, o.Reused, o.CurrentUser = cfg, "latest", "-" // no private details in a summary
	r, err := newRunner(o)
	if err != nil {
		return usage("%v", err)
	}
	r.noCharts = true
	if *sacctmgr != "" {
		if r.slurm.Paths == nil {
			r.slurm.Paths = map[string]string{}
		}
		r.slurm.Paths["sacctmgr"] = *sacctmgr
	}
	if !*dry {
		// A Slurm whose sacctmgr would corrupt every summary is refused
		// before anything is written.
		if v, err := r.slurm.Run(ctx, "sacctmgr", "--version"); err == nil && lowercasingSlurm(string(v)) {
			fmt.Fprintf(stderr, "jobscope report summaries: %s: its sacctmgr stores AdminComment in lower case, "+
				"which a JS1 summary (base64) does not survive, and slurmctld refuses to change a finished job: "+
				"nothing written (--dry-run prints the summaries)\n", strings.TrimSpace(string(v)))
			return ExitFailed
		}
	}
	start := time.Now()
	recs, err := slurmcli.SacctComments(ctx, r.slurm, slurmcli.CommentQuery{Since: r.now.Add(-time.Duration(d)),
		Until: r.now, Cluster: cfg.Cluster}, r.loc)
	if err != nil && !slurmcli.Partial(err) {
		fmt.Fprintf(stderr, "jobscope report summaries: %s\n", sacctTrouble(err))
		return ExitFailed
	}
	t := &summaryTally{Skipped: map[string]int{}, Failed: map[string]int{}, logged: map[string]bool{}, log: log}
	if err != nil {
		log.Warn("sacct left records out", "err", err.Error())
	}
	w := &summaryWriter{slurm: r.slurm, batch: *batch, dryRun: *dry, refresh: *refresh, cluster: cfg.Cluster,
		out: stdout, summarize: r.summarizeJob, readBack: r.readBack, tally: t}
	w.write(ctx, recs)
	el := time.Since(start)
	per := "-"
	if t.Written > 0 {
		per = fmt.Sprintf("%.3fs", el.Seconds()/float64(t.Written))
	}
	fmt.Fprintf(stderr, "jobscope report summaries: %d jobs ended in the last %s: %s; %.2fs, %s per job written\n",
		len(recs), *since, t, el.Seconds(), per)
	if len(t.Failed) > 0 {
		return ExitFailed
	}
	return ExitOK
}
