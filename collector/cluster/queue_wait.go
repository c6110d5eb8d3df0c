// SPDX-License-Identifier: Apache-2.0

package cluster

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/pflag"

	"github.com/jobscope/jobscope/collector"
	"github.com/jobscope/jobscope/collector/provide/slurm"
	"github.com/jobscope/jobscope/internal/flagval"
	"github.com/jobscope/jobscope/slurmcli"
)

// QueueWaitFactory describes the queue-wait collector (controller mode):
// how long jobs wait, why, and how many are submitted.
func QueueWaitFactory(sh *shared) collector.Factory {
	return collector.Factory{
		Name:      "slurm_queue_wait",
		Help:      "How long pending jobs have waited (by partition), the waits of jobs that started (by partition and QOS), the most common pending reasons, and jobs submitted, from the squeue snapshot (cached) and, for jobs squeue never listed, sacct",
		DefaultIn: []collector.Mode{collector.ModeController},
		Needs:     []string{slurm.Name},
		Descs:     func() []*collector.Desc { return newSlurmQueueWait(nil, 0).descs() },
		Flags: func(fs *pflag.FlagSet) func(env *collector.Env) (collector.Collector, error) {
			top := new(int)
			flagval.Int(fs, top, "collector.slurm_queue_wait.pending-reasons.top", 10, 1,
				"slurm_queue_wait collector: slurm_queue_pending_reasons lists this many reasons, the most common first; the rest add up under reason=\"other\".")
			// The name before the collector.<name> namespace (issue 26),
			// kept for one release; CHANGELOG.md lists it.
			flagval.Alias(fs, "slurm.pending-reasons.top", "collector.slurm_queue_wait.pending-reasons.top")
			return func(env *collector.Env) (collector.Collector, error) {
				c, err := sh.cacheFor(env)
				if err != nil {
					return nil, err
				}
				c.Want(slurmcli.SourceJobs)
				c.QueueTracker() // waits and submissions count from now on
				return newSlurmQueueWait(c, *top), nil
			}
		},
	}
}

type slurmQueueWait struct {
	cacheRef
	top int

	pending, started, reasons, submitted *collector.Desc
}

func newSlurmQueueWait(c *slurmcli.Cache, top int) *slurmQueueWait {
	const src = " From squeue, cached per --slurm.poll-interval."
	buckets := make([]string, len(slurmcli.WaitBuckets))
	for i, b := range slurmcli.WaitBuckets {
		buckets[i] = strconv.FormatFloat(b, 'f', -1, 64)
	}
	const bucketHelp = " Buckets (le, seconds): "
	return &slurmQueueWait{
		cacheRef: cacheRef{c},
		top:      top,
		pending: collector.NewDesc("slurm_queue_pending_wait_seconds",
			"How long the jobs pending now have waited since they were submitted, by partition: a snapshot, not a counter (read the buckets as they are, without rate()); a record standing for several unsplit array tasks counts each."+bucketHelp+strings.Join(buckets, ", ")+"."+src,
			"partition"),
		started: collector.NewDesc("slurm_queue_started_wait_seconds",
			"Waits (start minus submit time) of the jobs that started since jobscope started, by partition and QOS, each job observed once, at the first poll that shows it started: rate() and histogram_quantile() give the waits of recently started jobs."+bucketHelp+strings.Join(buckets, ", ")+"."+src,
			"partition", "qos"),
		reasons: collector.NewDesc("slurm_queue_pending_reasons",
			"Pending jobs by the reason Slurm gives, cluster-wide: the --collector.slurm_queue_wait.pending-reasons.top most common reasons, the rest under reason=\"other\"; a pending job array counts each task. Text output's descriptions are mapped back to Slurm's reason codes (\"Unrecognized\" where unknown)."+src,
			"reason"),
		submitted: collector.NewDesc("slurm_queue_jobs_submitted_total",
			"Jobs submitted since jobscope started (each array task counts), as squeue first lists them, or sacct for jobs that ended between two polls; it never resets, unlike sdiag's daily count."+src),
	}
}

func (c *slurmQueueWait) descs() []*collector.Desc {
	return []*collector.Desc{c.pending, c.started, c.reasons, c.submitted}
}

// Collect reads the jobs snapshot the slurm_jobs collector reports the
// status of, and hands each poll to the tracker once.
func (c *slurmQueueWait) Collect(s *collector.Scrape, ch chan<- prometheus.Metric) error {
	// Jobs that ended between two squeue polls reach the tracker from this
	// interval's sacct run (when the sacct collector is on): wait for both,
	// so the submitted count does not lag one scrape behind.
	c.cache.Refresh(s.Context(), slurmcli.SourceJobs, slurmcli.SourceSacct)
	r := c.cache.Jobs.Get(s.Context())
	tracker := c.cache.QueueTracker()
	jobs, ok, err := slurmcli.Serve(r, c.cache.MaxAge())
	if ok {
		tracker.ObserveQueue(jobs, r.Good)
		c.emitPending(jobs, r.At, ch)
	}
	totals := tracker.Totals()
	for k, h := range totals.StartedWaits {
		ch <- c.started.Histogram(h.Count, h.Sum, h.BucketMap(), slurmLabel(k.Partition), slurmLabel(k.QOS))
	}
	ch <- c.submitted.Counter(totals.Submitted)
	if err != nil {
		return fmt.Errorf("slurm jobs: %w", err)
	}
	return nil
}

func (c *slurmQueueWait) emitPending(jobs []slurmcli.Job, now time.Time, ch chan<- prometheus.Metric) {
	waits := map[string]*slurmcli.Histogram{}
	for p, h := range slurmcli.PendingWaits(jobs, now) {
		if w := waits[slurmLabel(p)]; w != nil {
			w.Merge(h)
		} else {
			waits[slurmLabel(p)] = h
		}
	}
	for p, h := range waits {
		ch <- c.pending.Histogram(h.Count, h.Sum, h.BucketMap(), p)
	}
	byReason := map[string]float64{}
	for _, j := range jobs {
		if j.State == "PENDING" {
			byReason[slurmLabel(j.Reason)] += float64(max(j.Count, 1))
		}
	}
	type rc struct {
		reason string
		n      float64
	}
	var list []rc
	for r, n := range byReason {
		list = append(list, rc{r, n})
	}
	sort.Slice(list, func(i, j int) bool {
		if list[i].n != list[j].n {
			return list[i].n > list[j].n
		}
		return list[i].reason < list[j].reason
	})
	other := 0.0
	for i, x := range list {
		if i < c.top && x.reason != "other" {
			ch <- c.reasons.Gauge(x.n, x.reason)
		} else {
			other += x.n
		}
	}
	if other > 0 {
		ch <- c.reasons.Gauge(other, "other")
	}
}
