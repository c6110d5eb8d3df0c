// SPDX-License-Identifier: Apache-2.0

package cluster

import (
	"fmt"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/jobscope/jobscope/collector"
	"github.com/jobscope/jobscope/slurmcli"
)

// slurmHostlistLimit bounds the names one reservation's node list may
// expand to (a malformed range must not exhaust memory).
const slurmHostlistLimit = 1 << 20

// ReservationsFactory describes the reservation collector.
func ReservationsFactory(sh *shared) collector.Factory {
	return slurmFactory(sh, "slurm_reservations",
		"Advance reservations (maintenance windows, reserved nodes): state, nodes, cores, start and end, and the CPUs idle and allocated on their nodes, from scontrol show reservation and the node snapshot (cached)",
		slurmcli.SourceReservations, func(c *slurmcli.Cache) slurmCollector { return newSlurmReservations(c) })
}

type slurmReservations struct {
	source

	info, start, end, nodes, cores, cpus, idle, alloc *collector.Desc
}

func newSlurmReservations(c *slurmcli.Cache) *slurmReservations {
	const src = " From scontrol show reservation, cached per --slurm.slow-poll-interval."
	if c != nil {
		c.Want(slurmcli.SourceNodes) // for the idle and allocated CPUs
	}
	d := func(name, help string, labels ...string) *collector.Desc {
		return collector.NewDesc(name, help+src, append([]string{"reservation"}, labels...)...)
	}
	return &slurmReservations{
		source: newSource(c),
		info: d("slurm_reservation_info",
			"1 for each reservation, with its state (active or inactive), flags, partition, users and accounts (lists cut to 80 bytes) and node list.",
			"state", "flags", "partition", "users", "accounts", "nodes"),
		start: d("slurm_reservation_start_timestamp_seconds", "When the reservation starts (Unix time)."),
		end:   d("slurm_reservation_end_timestamp_seconds", "When the reservation ends (Unix time)."),
		nodes: d("slurm_reservation_nodes", "Nodes in the reservation (NodeCnt)."),
		cores: d("slurm_reservation_cores", "Cores in the reservation (CoreCnt)."),
		cpus:  d("slurm_reservation_cpus", "CPUs in the reservation (cpu in its TRES)."),
		idle: d("slurm_reservation_cpus_idle",
			"CPUs of the reservation's nodes that are idle and usable now (at most slurm_reservation_cpus): capacity the reservation holds unused while it is active. Read with the node snapshot."),
		alloc: d("slurm_reservation_cpus_allocated",
			"CPUs of the reservation's nodes allocated to jobs now, in the reservation or not: before it starts, the jobs it must wait for or that a maintenance window will meet. Read with the node snapshot."),
	}
}

func (c *slurmReservations) descs() []*collector.Desc {
	return []*collector.Desc{c.status.up, c.status.age, c.info, c.start, c.end, c.nodes, c.cores, c.cpus, c.idle, c.alloc}
}

func (c *slurmReservations) Collect(s *collector.Scrape, ch chan<- prometheus.Metric) error {
	resvs, ok, err := read(c.status, s, c.cache, c.cache.Reservations, slurmcli.SourceReservations, ch)
	if !ok {
		return err
	}
	now := c.cache.Now()
	var byName map[string]slurmcli.Node
	if nodes, ok, _ := slurmcli.Serve(c.cache.Nodes.Get(s.Context()), c.cache.MaxAge()); ok {
		byName = make(map[string]slurmcli.Node, len(nodes))
		for _, n := range nodes {
			byName[n.Name] = n
		}
	}
	seen := map[string]bool{}
	for _, r := range resvs {
		name := slurmLabel(r.Name)
		if seen[name] {
			continue
		}
		seen[name] = true
		state := "inactive"
		if r.ActiveAt(now) {
			state = "active"
		}
		ch <- c.info.Gauge(1, name, state,
			slurmLabel(strings.ToLower(strings.Join(r.Flags, ","))), slurmLabel(r.Partition),
			slurmcli.BoundedText(r.Users, slurmNodeReasonMax), slurmcli.BoundedText(r.Accounts, slurmNodeReasonMax),
			slurmcli.BoundedText(r.Nodes, slurmNodeReasonMax))
		g := func(d *collector.Desc, v float64) { ch <- d.Gauge(v, name) }
		g(c.start, float64(r.Start.Unix()))
		g(c.end, float64(r.End.Unix()))
		g(c.nodes, r.NodeCount)
		g(c.cores, r.CoreCount)
		g(c.cpus, r.CPUs)
		if byName == nil || r.Nodes == "" {
			continue
		}
		names, herr := slurmcli.ExpandHostlist(r.Nodes, slurmHostlistLimit)
		if herr != nil {
			s.Problem("bad_hostlist", fmt.Errorf("reservation %s: %w", r.Name, herr))
			continue
		}
		var idle, alloc float64
		for _, n := range names {
			node := byName[n]
			idle += node.IdleCPUs()
			alloc += node.AllocCPUs
		}
		if r.CPUs > 0 {
			idle = min(idle, r.CPUs)
		}
		g(c.idle, idle)
		g(c.alloc, alloc)
	}
	return err
}
