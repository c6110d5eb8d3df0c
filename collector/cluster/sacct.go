package cluster

import (
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/pflag"

	"github.com/jobscope/jobscope/collector"
	"github.com/jobscope/jobscope/slurmcli"
)

// SacctFactory describes the opt-in collector of ended jobs (sacct
// queries reach slurmdbd, so it is off unless asked for).
func SacctFactory(sh *shared) collector.Factory {
	return collector.Factory{
		Name: "slurm_sacct",
		Help: "Jobs ended since --slurm.sacct.since by final state, partition and account, from incremental sacct queries (cached)",
		// Off by default in every mode: each poll queries slurmdbd.
		DefaultIn: nil,
		Descs:     func() []*collector.Desc { return newSlurmSacct(nil).descs() },
		Flags: func(fs *pflag.FlagSet) func(env *collector.Env) (collector.Collector, error) {
			sh.flags(fs)
			since := fs.String("slurm.sacct.since", "24h",
				"slurm_sacct collector: count jobs that ended since this time: a duration before start-up (24h) or a time (2026-01-01, 2026-01-01T00:00:00).")
			overlap := fs.Duration("slurm.sacct.overlap", 10*time.Minute,
				"slurm_sacct collector: each incremental query reaches back this far, so job records slurmdbd stores late are still counted (once).")
			return func(env *collector.Env) (collector.Collector, error) {
				c, err := sh.cacheFor(env)
				if err != nil {
					return nil, err
				}
				if *overlap < 0 {
					return nil, fmt.Errorf("--slurm.sacct.overlap must not be negative")
				}
				t, err := slurmcli.ParseSince(*since, c.Now(), time.Local)
				if err != nil {
					return nil, fmt.Errorf("--slurm.sacct.since: %w", err)
				}
				c.EnableSacct(slurmcli.NewSacctCounter(t, *overlap, time.Local))
				return newSlurmSacct(c), nil
			}
		},
	}
}

type slurmSacct struct {
	source
	ended *collector.Desc
}

func newSlurmSacct(c *slurmcli.Cache) *slurmSacct {
	return &slurmSacct{
		source: newSource(c),
		ended: collector.NewDesc("slurm_jobs_ended_total",
			"Jobs that ended since --slurm.sacct.since (or jobscope's start), by final state (completed, failed, timeout, cancelled, out_of_memory, node_fail, preempted, ...), partition and account. From incremental sacct queries, one per --slurm.poll-interval.", "partition", "account", "state"),
	}
}

func (c *slurmSacct) descs() []*collector.Desc {
	return []*collector.Desc{c.status.up, c.status.age, c.ended}
}

func (c *slurmSacct) Collect(s *collector.Scrape, ch chan<- prometheus.Metric) error {
	counts, ok, err := read(c.status, s, c.cache, c.cache.Sacct, slurmcli.SourceSacct, ch)
	if !ok {
		return err
	}
	for k, n := range counts {
		ch <- c.ended.Counter(n,
			slurmLabel(k.Partition), slurmLabel(k.Account), slurmLabel(k.State))
	}
	return err
}
