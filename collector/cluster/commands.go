// SPDX-License-Identifier: Apache-2.0

package cluster

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/jobscope/jobscope/collector"
	"github.com/jobscope/jobscope/slurmcli"
)

// CommandsFactory describes the collector of jobscope's own Slurm
// command counters (controller mode).
func CommandsFactory(sh *shared) collector.Factory {
	return slurmFactory(sh, "slurm_commands",
		"jobscope's Slurm command runs, errors by cause and durations",
		"", func(c *slurmcli.Cache) slurmCollector { return newSlurmCommands(c) })
}

// slurmCommandCauses are always exported (as 0 until they happen) so that
// rate() and alerts work from the first error on.
var slurmCommandCauses = []string{slurmcli.CauseTimeout, slurmcli.CauseExit, slurmcli.CauseStart,
	slurmcli.CauseParse, slurmcli.CauseTooLarge, slurmcli.CauseCanceled, slurmcli.CauseRecord}

type slurmCommands struct {
	cacheRef
	runs, errs, seconds, lastTime *collector.Desc
}

func newSlurmCommands(c *slurmcli.Cache) *slurmCommands {
	return &slurmCommands{
		cacheRef: cacheRef{c},
		runs: collector.NewDesc("jobscope_slurm_command_runs_total",
			"Slurm commands jobscope ran since start, counted by its command runner, and slurmrestd requests with --slurm.source=slurmrestd (command=\"slurmrestd:ping|jobs|nodes\"; at most one per source per --slurm.poll-interval, or --slurm.slow-poll-interval for sshare and scontrol show reservation and licenses, whatever the number of scrapes).", "command"),
		errs: collector.NewDesc("jobscope_slurm_command_errors_total",
			"Slurm command runs that failed, by cause: timeout (killed at --slurm.command-timeout), exit (non-zero status; for slurmrestd:* an HTTP error status), start (also: slurmrestd unreachable), parse (output not understood), too_large, canceled; and record: records left out of an answer otherwise used (unreadable, or a job printed twice), counted one by one.", "command", "cause"),
		seconds: collector.NewDesc("jobscope_slurm_command_duration_seconds_total",
			"Wall time spent running Slurm commands since start, measured by jobscope's command runner.", "command"),
		lastTime: collector.NewDesc("jobscope_slurm_command_last_duration_seconds",
			"Wall time of the latest run of each Slurm command, measured by jobscope's command runner (runs happen once per poll interval, not per scrape).", "command"),
	}
}

// Collect waits for this poll interval's refresh like the other cluster
// collectors (single-flight: it adds no command run), so the counters
// include the runs and errors behind this scrape's values.
func (c *slurmCommands) Collect(s *collector.Scrape, ch chan<- prometheus.Metric) error {
	c.cache.Refresh(s.Context())
	names, stats := c.cache.Runner().Stats().Snapshot()
	for _, n := range names {
		st := stats[n]
		ch <- c.runs.Counter(st.Runs, n)
		ch <- c.seconds.Counter(st.Seconds, n)
		ch <- c.lastTime.Gauge(st.LastDuration.Seconds(), n)
		for _, cause := range slurmCommandCauses {
			ch <- c.errs.Counter(st.Errors[cause], n, cause)
		}
	}
	return nil
}

func (c *slurmCommands) descs() []*collector.Desc {
	return []*collector.Desc{c.runs, c.errs, c.seconds, c.lastTime}
}
