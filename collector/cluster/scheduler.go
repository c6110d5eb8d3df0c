// SPDX-License-Identifier: Apache-2.0

package cluster

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/jobscope/jobscope/collector"
	"github.com/jobscope/jobscope/slurmcli"
)

// SchedulerFactory describes the sdiag collector (controller mode).
func SchedulerFactory(sh *shared) collector.Factory {
	return slurmFactory(sh, "slurm_scheduler",
		"slurmctld scheduler statistics: main and backfill cycles, queues, threads, RPCs by type and user, from sdiag (cached)",
		slurmcli.SourceDiag, func(c *slurmcli.Cache) slurmCollector { return newSlurmScheduler(c) })
}

// slurmDiagMetric maps one sdiag value to a metric, divided by div (1e6 for the
// times sdiag prints in microseconds).
type slurmDiagMetric struct {
	section, key string
	desc         *collector.Desc
	typ          prometheus.ValueType
	div          float64
	event        string
}

type slurmScheduler struct {
	source
	values []slurmDiagMetric

	rpcCalls, rpcTime, userCalls, userTime, pending *collector.Desc
}

func newSlurmScheduler(c *slurmcli.Cache) *slurmScheduler {
	const src = " From sdiag, cached per --slurm.poll-interval."
	const reset = " Counts since the last statistics reset (slurmctld start, midnight UTC, or sdiag -r)."
	g := func(name, help string, labels ...string) *collector.Desc {
		return collector.NewDesc(name, help+src, labels...)
	}
	jobs := g("slurm_scheduler_jobs_total", "Jobs submitted, started, completed, canceled and failed."+reset, "event")
	mainCycles := g("slurm_scheduler_main_cycles_total", "Main scheduler cycles."+reset)
	bfCycles := g("slurm_scheduler_backfill_cycles_total", "Backfill scheduler cycles."+reset)
	us := 1e6
	m := func(section, key string, d *collector.Desc, typ prometheus.ValueType, div float64, lv string) slurmDiagMetric {
		return slurmDiagMetric{section: section, key: key, desc: d, typ: typ, div: div, event: lv}
	}
	gauge, counter := prometheus.GaugeValue, prometheus.CounterValue
	top, mainS, bf := slurmcli.DiagTop, slurmcli.DiagMain, slurmcli.DiagBackfill
	return &slurmScheduler{
		source: newSource(c),
		values: []slurmDiagMetric{
			m(top, "server thread count", g("slurm_scheduler_threads", "slurmctld server threads in use."), gauge, 1, ""),
			m(top, "agent queue size", g("slurm_scheduler_agent_queue_size", "Outgoing RPCs queued in slurmctld's agent."), gauge, 1, ""),
			m(top, "agent count", g("slurm_scheduler_agents", "slurmctld agents running."), gauge, 1, ""),
			m(top, "agent thread count", g("slurm_scheduler_agent_threads", "Threads of slurmctld's agents."), gauge, 1, ""),
			m(top, "dbd agent queue size", g("slurm_scheduler_dbd_agent_queue_size", "Messages queued for slurmdbd (grows while slurmdbd is unreachable)."), gauge, 1, ""),
			m(top, "data since", g("slurm_scheduler_stats_reset_timestamp_seconds", "When sdiag's statistics were last reset (Unix time)."), gauge, 1, ""),
			m(top, "jobs submitted", jobs, counter, 1, "submitted"),
			m(top, "jobs started", jobs, counter, 1, "started"),
			m(top, "jobs completed", jobs, counter, 1, "completed"),
			m(top, "jobs canceled", jobs, counter, 1, "canceled"),
			m(top, "jobs failed", jobs, counter, 1, "failed"),
			m(mainS, "last cycle", g("slurm_scheduler_main_cycle_last_seconds", "Duration of the last main scheduler cycle."), gauge, us, ""),
			m(mainS, "max cycle", g("slurm_scheduler_main_cycle_max_seconds", "Longest main scheduler cycle."+reset), gauge, us, ""),
			m(mainS, "mean cycle", g("slurm_scheduler_main_cycle_mean_seconds", "Mean main scheduler cycle."+reset), gauge, us, ""),
			m(mainS, "total cycles", mainCycles, counter, 1, ""),
			m(mainS, "mean depth cycle", g("slurm_scheduler_main_depth_mean", "Mean number of jobs the main scheduler looked at per cycle."), gauge, 1, ""),
			m(mainS, "last queue length", g("slurm_scheduler_main_queue_length", "Jobs in the main scheduler's queue at its last cycle."), gauge, 1, ""),
			m(bf, "last cycle", g("slurm_scheduler_backfill_cycle_last_seconds", "Duration of the last backfill cycle."), gauge, us, ""),
			m(bf, "max cycle", g("slurm_scheduler_backfill_cycle_max_seconds", "Longest backfill cycle."+reset), gauge, us, ""),
			m(bf, "mean cycle", g("slurm_scheduler_backfill_cycle_mean_seconds", "Mean backfill cycle."+reset), gauge, us, ""),
			m(bf, "total cycles", bfCycles, counter, 1, ""),
			m(bf, "total backfilled jobs (since last slurm start)", g("slurm_scheduler_backfilled_jobs_total", "Jobs started by the backfill scheduler since slurmctld started."), counter, 1, ""),
			m(bf, "last depth cycle", g("slurm_scheduler_backfill_depth_last", "Jobs the last backfill cycle looked at."), gauge, 1, ""),
			m(bf, "depth mean", g("slurm_scheduler_backfill_depth_mean", "Mean jobs looked at per backfill cycle."), gauge, 1, ""),
			m(bf, "last queue length", g("slurm_scheduler_backfill_queue_length", "Jobs in the backfill queue at its last cycle."), gauge, 1, ""),
			m(bf, "last cycle when", g("slurm_scheduler_backfill_last_cycle_timestamp_seconds", "When the last backfill cycle ran (Unix time)."), gauge, 1, ""),
		},
		rpcCalls:  g("slurm_rpc_calls_total", "RPCs slurmctld handled, by message type."+reset, "type"),
		rpcTime:   g("slurm_rpc_duration_seconds_total", "Time slurmctld spent handling RPCs, by message type."+reset, "type"),
		userCalls: g("slurm_rpc_user_calls_total", "RPCs slurmctld handled, by user."+reset, "user"),
		userTime:  g("slurm_rpc_user_duration_seconds_total", "Time slurmctld spent handling RPCs, by user."+reset, "user"),
		pending:   g("slurm_rpc_pending", "RPCs queued to be sent by slurmctld, by message type.", "type"),
	}
}

func (c *slurmScheduler) Collect(s *collector.Scrape, ch chan<- prometheus.Metric) error {
	d, ok, err := read(c.status, s, c.cache, c.cache.Diag, slurmcli.SourceDiag, ch)
	if !ok {
		return err
	}
	if d == nil {
		return errors.New("slurm diag: no statistics in the snapshot")
	}
	for _, m := range c.values {
		x, found := d.Get(m.section, m.key)
		if !found {
			continue // not printed by this Slurm version
		}
		if m.event != "" {
			ch <- m.desc.Metric(m.typ, x/m.div, m.event)
		} else {
			ch <- m.desc.Metric(m.typ, x/m.div)
		}
	}
	rpc := func(stats []slurmcli.RPCStat, calls, dur *collector.Desc) {
		seen := map[string]bool{}
		for _, st := range stats {
			name := slurmLabel(st.Name)
			if seen[name] {
				continue
			}
			seen[name] = true
			ch <- calls.Counter(st.Count, name)
			if dur != nil {
				ch <- dur.Counter(st.TotalMicros/1e6, name)
			}
		}
	}
	rpc(d.RPCByType, c.rpcCalls, c.rpcTime)
	rpc(d.RPCByUser, c.userCalls, c.userTime)
	pend := map[string]float64{}
	for _, st := range d.PendingRPCs {
		pend[slurmLabel(st.Name)] += st.Count
	}
	for name, n := range pend {
		ch <- c.pending.Gauge(n, name)
	}
	return err
}

func (c *slurmScheduler) descs() []*collector.Desc {
	out := []*collector.Desc{c.status.up, c.status.age, c.rpcCalls, c.rpcTime, c.userCalls, c.userTime, c.pending}
	seen := map[*collector.Desc]bool{}
	for _, m := range c.values {
		if !seen[m.desc] {
			seen[m.desc] = true
			out = append(out, m.desc)
		}
	}
	return out
}
