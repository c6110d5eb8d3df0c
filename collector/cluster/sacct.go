// SPDX-License-Identifier: Apache-2.0

package cluster

import (
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/pflag"

	"github.com/jobscope/jobscope/collector"
	"github.com/jobscope/jobscope/collector/provide/slurm"
	"github.com/jobscope/jobscope/internal/flagval"
	"github.com/jobscope/jobscope/slurmcli"
)

// SacctFactory describes the collector of ended jobs. It is on by default
// in controller mode: each poll asks slurmdbd only for the jobs that ended
// since the previous one.
func SacctFactory(sh *shared) collector.Factory {
	return collector.Factory{
		Name:      "slurm_sacct",
		Help:      "Jobs ended since --collector.slurm_sacct.since by final state, partition and account, from incremental sacct queries: one per poll interval, each asking only for jobs that ended since the previous one (cached)",
		DefaultIn: []collector.Mode{collector.ModeController},
		Needs:     []string{slurm.Name},
		Descs:     func() []*collector.Desc { return newSlurmSacct(nil).descs() },
		Flags: func(fs *pflag.FlagSet) func(env *collector.Env) (collector.Collector, error) {
			since := new(string)
			flagval.String(fs, since, "collector.slurm_sacct.since", "24 hours ago",
				"slurm_sacct collector: count jobs that ended since this time: relative (\"24 hours ago\", \"7 days ago\", \"1 week ago\", 24h), a date or time in the local zone (2026-01-01, 2026-01-01T06:30:00), RFC 3339, \"now\" or a Unix time.", checkSince)
			overlap, maxWindow := new(time.Duration), new(time.Duration)
			flagval.Duration(fs, overlap, "collector.slurm_sacct.overlap", 2*time.Minute, 0,
				"slurm_sacct collector: each incremental query reaches back this far, so job records slurmdbd stores late are still counted (once); records later than this (slurmdbd unreachable for longer) are missed.")
			flagval.Duration(fs, maxWindow, "collector.slurm_sacct.max-window", 24*time.Hour, 1,
				"slurm_sacct collector: the longest span one query asks for; a --collector.slurm_sacct.since further back is caught up one such window per poll (jobscope_slurm_sacct_behind_seconds shows the way left).")
			// The names before the collector.<name> namespace (issue 26),
			// kept for one release; CHANGELOG.md lists them.
			for _, n := range []string{"since", "overlap", "max-window"} {
				flagval.Alias(fs, "slurm.sacct."+n, "collector.slurm_sacct."+n)
			}
			return func(env *collector.Env) (collector.Collector, error) {
				c, err := sh.cacheFor(env)
				if err != nil {
					return nil, err
				}
				t, err := slurmcli.ParseSince(*since, c.Now(), time.Local)
				if err != nil {
					return nil, fmt.Errorf("--collector.slurm_sacct.since: %w", err)
				}
				counter := slurmcli.NewSacctCounter(t, *overlap, *maxWindow, time.Local)
				// Jobs that ended between two squeue polls are submissions
				// squeue never listed.
				c.ExtendQueueRetention(*overlap)
				counter.OnEnded(c.QueueTracker().ObserveEnded)
				c.EnableSacct(counter)
				return newSlurmSacct(c), nil
			}
		},
	}
}

// checkSince refuses a --collector.slurm_sacct.since that ParseSince cannot read, at
// start; the collector parses it again against its cache's clock.
func checkSince(s string) error {
	_, err := slurmcli.ParseSince(s, time.Now(), time.Local)
	return err
}

type slurmSacct struct {
	source
	ended, records, window, behind *collector.Desc
}

func newSlurmSacct(c *slurmcli.Cache) *slurmSacct {
	return &slurmSacct{
		source: newSource(c),
		ended: collector.NewDesc("slurm_jobs_ended_total",
			"Jobs that ended since --collector.slurm_sacct.since (or jobscope's start), by final state (completed, failed, timeout, cancelled, out_of_memory, node_fail, preempted, ...), partition and account. An array's tasks cancelled before they started, which sacct shows as one record such as 8_[2-3], count as the tasks the record names (2 here). From incremental sacct queries, one per --slurm.poll-interval.",
			"partition", "account", "state"),
		records: collector.NewDesc("jobscope_slurm_sacct_records_total",
			"Job records jobscope's incremental sacct queries got from slurmdbd since start (a record in the overlap of two queries counts in both): slurmdbd's load from jobscope."),
		window: collector.NewDesc("jobscope_slurm_sacct_window_seconds",
			"Span of end times the latest sacct query asked slurmdbd for: the poll interval plus --collector.slurm_sacct.overlap once caught up."),
		behind: collector.NewDesc("jobscope_slurm_sacct_behind_seconds",
			"How far the latest sacct query's window ends before the poll time: 0 once --collector.slurm_sacct.since is caught up (while it is not, slurm_jobs_ended_total grows by whole past windows)."),
	}
}

func (c *slurmSacct) descs() []*collector.Desc {
	return []*collector.Desc{c.status.up, c.status.age, c.ended, c.records, c.window, c.behind}
}

func (c *slurmSacct) Collect(s *collector.Scrape, ch chan<- prometheus.Metric) error {
	counts, ok, err := read(c.status, s, c.cache, c.cache.Sacct, slurmcli.SourceSacct, ch)
	if !ok {
		return err
	}
	ended := map[slurmcli.EndKey]float64{}
	for k, n := range counts.Ended {
		// Labels are cleaned before they are keys: two raw values that
		// clean alike add up instead of becoming duplicate series.
		ended[slurmcli.EndKey{State: slurmLabel(k.State), Partition: slurmLabel(k.Partition), Account: slurmLabel(k.Account)}] += n
	}
	for k, n := range ended {
		ch <- c.ended.Counter(n, k.Partition, k.Account, k.State)
	}
	st := counts.Stats
	ch <- c.records.Counter(st.Records)
	ch <- c.window.Gauge(st.Window.Seconds())
	ch <- c.behind.Gauge(st.Behind.Seconds())
	return err
}
