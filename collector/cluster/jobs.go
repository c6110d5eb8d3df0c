// SPDX-License-Identifier: Apache-2.0

package cluster

import (
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/jobscope/jobscope/collector"
	"github.com/jobscope/jobscope/slurmcli"
)

// JobsFactory describes the cluster job collector (controller mode).
func JobsFactory(sh *shared) collector.Factory {
	return slurmFactory(sh, "slurm_jobs",
		"Cluster jobs by state, partition, user and account, and pending reasons, from squeue (cached)",
		slurmcli.SourceJobs, func(c *slurmcli.Cache) slurmCollector { return newSlurmJobs(c) })
}

// slurmJobGroupDescs are the four values kept per group of jobs.
type slurmJobGroupDescs struct{ jobs, cpus, mem, gpus *collector.Desc }

func newSlurmJobGroupDescs(prefix, what string, labels []string) slurmJobGroupDescs {
	const cached = " From squeue, cached per --slurm.poll-interval; ended jobs squeue still lists are not counted."
	return slurmJobGroupDescs{
		jobs: collector.NewDesc(prefix, "Jobs in the Slurm queue by "+what+"; a pending job array counts each of its tasks."+cached, labels...),
		cpus: collector.NewDesc(prefix+"_cpus", "CPUs of queued jobs by "+what+": allocated ones for jobs that have resources, requested ones for pending jobs."+cached, labels...),
		mem:  collector.NewDesc(prefix+"_memory_bytes", "Memory of queued jobs by "+what+": allocated (TRES) for jobs that have resources, requested for pending jobs."+cached, labels...),
		gpus: collector.NewDesc(prefix+"_gpus", "GPUs (gres/gpu) of queued jobs by "+what+": allocated for jobs that have resources, requested for pending jobs."+cached, labels...),
	}
}

type slurmJobs struct {
	source
	byPart  slurmJobGroupDescs
	byUser  slurmJobGroupDescs
	byAcct  slurmJobGroupDescs
	pending *collector.Desc
}

func newSlurmJobs(c *slurmcli.Cache) *slurmJobs {
	return &slurmJobs{
		source: newSource(c),
		byPart: newSlurmJobGroupDescs("slurm_queue_jobs", "partition and state", []string{"partition", "state"}),
		byUser: newSlurmJobGroupDescs("slurm_queue_user_jobs", "user and state", []string{"user", "state"}),
		byAcct: newSlurmJobGroupDescs("slurm_queue_account_jobs", "account and state", []string{"account", "state"}),
		pending: collector.NewDesc("slurm_queue_jobs_pending",
			"Pending jobs by partition and the reason Slurm gives (Priority, Resources, BeginTime, JobHeldUser, ...); a pending job array counts each task. From squeue, cached per --slurm.poll-interval.", "partition", "reason"),
	}
}

type slurmJobSums struct{ jobs, cpus, mem, gpus float64 }

type slurmLabelPair [2]string

func (c *slurmJobs) Collect(s *collector.Scrape, ch chan<- prometheus.Metric) error {
	jobs, ok, err := read(c.status, s, c.cache, c.cache.Jobs, slurmcli.SourceJobs, ch)
	if !ok {
		return err
	}
	byPart := map[slurmLabelPair]*slurmJobSums{}
	byUser := map[slurmLabelPair]*slurmJobSums{}
	byAcct := map[slurmLabelPair]*slurmJobSums{}
	pending := map[slurmLabelPair]float64{}
	add := func(m map[slurmLabelPair]*slurmJobSums, k slurmLabelPair, j slurmcli.Job) {
		sum := m[k]
		if sum == nil {
			sum = &slurmJobSums{}
			m[k] = sum
		}
		n := float64(j.Count)
		sum.jobs += n
		sum.cpus += n * j.CPUs
		sum.mem += n * j.MemoryBytes
		sum.gpus += n * j.GPUs
	}
	// A queue has a handful of states: lowered once each, not once a job.
	lower := map[string]string{}
	for _, j := range jobs {
		if !j.InQueue() {
			continue
		}
		// Labels are made valid UTF-8 before grouping: two raw names that
		// clean to one value must add up, not become duplicate series.
		state, ok := lower[j.State]
		if !ok {
			state = slurmLabel(strings.ToLower(j.State))
			lower[j.State] = state
		}
		part := slurmLabel(j.Partition)
		add(byPart, slurmLabelPair{part, state}, j)
		add(byUser, slurmLabelPair{slurmLabel(j.User), state}, j)
		add(byAcct, slurmLabelPair{slurmLabel(j.Account), state}, j)
		if j.State == "PENDING" {
			pending[slurmLabelPair{part, slurmLabel(j.Reason)}] += float64(j.Count)
		}
	}
	emit := func(d slurmJobGroupDescs, m map[slurmLabelPair]*slurmJobSums) {
		for k, sum := range m {
			a, b := slurmLabel(k[0]), slurmLabel(k[1])
			ch <- d.jobs.Gauge(sum.jobs, a, b)
			ch <- d.cpus.Gauge(sum.cpus, a, b)
			ch <- d.mem.Gauge(sum.mem, a, b)
			ch <- d.gpus.Gauge(sum.gpus, a, b)
		}
	}
	emit(c.byPart, byPart)
	emit(c.byUser, byUser)
	emit(c.byAcct, byAcct)
	for k, n := range pending {
		ch <- c.pending.Gauge(n, slurmLabel(k[0]), slurmLabel(k[1]))
	}
	return err
}

func (c *slurmJobs) descs() []*collector.Desc {
	out := []*collector.Desc{c.status.up, c.status.age, c.pending}
	for _, g := range []slurmJobGroupDescs{c.byPart, c.byUser, c.byAcct} {
		out = append(out, g.jobs, g.cpus, g.mem, g.gpus)
	}
	return out
}
