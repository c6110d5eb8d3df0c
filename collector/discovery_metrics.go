// SPDX-License-Identifier: Apache-2.0

package collector

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/jobscope/jobscope/discovery"
)

// discoveryDescs are job discovery's own metrics: what it saw in the
// cgroup scopes, what it could not read as a job, and its background squeue.
type discoveryDescs struct {
	dirs, skipped, squeueUp, squeueRuns, squeueErrors *Desc
}

func newDiscoveryDescs() discoveryDescs {
	return discoveryDescs{
		dirs: NewDesc("jobscope_discovery_job_directories",
			"Job-shaped directories in this node's Slurm cgroup scopes in this scrape, by naming scheme: job_id (job_<id>), sluid (Slurm 26.05's <SLUID>), unknown (a job_ prefix or step_* directories, but neither). Compare with jobscope_jobs: directories that export no job are counted in jobscope_discovery_skipped_total.", "scheme"),
		skipped: NewDesc("jobscope_discovery_skipped_total",
			"Job directories not exported as a job, once per scrape that met them, by reason: unknown_scheme, job_id_unresolved (a SLUID directory whose job id no source gave yet), duplicate_job. The first of each reason is logged.", "reason"),
		squeueUp: NewDesc("jobscope_discovery_squeue_up",
			"1 if the latest background squeue for job metadata succeeded, 0 if it failed (jobs are still exported, with the metadata the node has; retried with backoff). Absent before the first run."),
		squeueRuns: NewDesc("jobscope_discovery_squeue_runs_total",
			"Background squeue runs for job metadata (one per interval at most, only while a job lacks metadata or a SLUID directory its job id)."),
		squeueErrors: NewDesc("jobscope_discovery_squeue_errors_total",
			"Failed background squeue runs for job metadata, by cause (timeout, exit, start, parse, ...); cause record counts records left out of an answer otherwise used (unreadable, or a job printed twice).", "cause"),
	}
}

func (d discoveryDescs) collect(ch chan<- prometheus.Metric, scan discovery.ScanStats, st discovery.Status) {
	for _, s := range discovery.Schemes {
		ch <- d.dirs.Gauge(float64(scan.Dirs[s]), s)
	}
	for _, r := range discovery.SkipReasons {
		ch <- d.skipped.Counter(st.Skipped[r], r)
	}
	q := st.Queue
	if !q.Enabled {
		return
	}
	ch <- d.squeueRuns.Counter(q.Runs)
	if q.Up >= 0 {
		ch <- d.squeueUp.Gauge(float64(q.Up))
	}
	for cause, n := range q.Errors {
		ch <- d.squeueErrors.Counter(n, cause)
	}
}
