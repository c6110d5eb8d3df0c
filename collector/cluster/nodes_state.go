// SPDX-License-Identifier: Apache-2.0

package cluster

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/jobscope/jobscope/collector"
	"github.com/jobscope/jobscope/slurmcli"
)

// slurmNodeStateDescs are the slurm_nodes collector's families that follow
// a node's state and load: CPUs by node state (the set rivosinc's exporter
// reports as slurm_cpus_per_state), and load and weight per partition.
type slurmNodeStateDescs struct {
	stateCPUs, load, partLoad, partWeight *collector.Desc
}

func newSlurmNodeStateDescs() slurmNodeStateDescs {
	const src = " From sinfo --json -N (or scontrol show node -o), cached per --slurm.poll-interval."
	const perPart = " A node in several partitions counts in each of them."
	return slurmNodeStateDescs{
		stateCPUs: collector.NewDesc("slurm_cluster_node_state_cpus",
			"CPUs (CPUTot) of the nodes in each state, each node counted once: allocated, mixed, idle, completing, down, drained, draining, fail, failing, maint, reserved, powered_down, powering_up, ..., as slurm_cluster_nodes."+src,
			"state"),
		load: collector.NewDesc("slurm_cluster_cpu_load",
			"Sum of the nodes' 1-minute load averages (CPULoad), for nodes whose slurmd reports one."+src),
		partLoad: collector.NewDesc("slurm_cluster_partition_cpu_load",
			"Sum of the 1-minute load averages of the partition's nodes."+perPart+src, "partition"),
		partWeight: collector.NewDesc("slurm_cluster_partition_weight",
			"Sum of the scheduling Weight of the partition's nodes (divided by slurm_cluster_partition_nodes: their mean weight)."+perPart+src,
			"partition"),
	}
}

func (d slurmNodeStateDescs) list() []*collector.Desc {
	return []*collector.Desc{d.stateCPUs, d.load, d.partLoad, d.partWeight}
}

// emit adds the families up over the nodes take accepts (the caller has
// dropped nodes listed twice).
func (d slurmNodeStateDescs) emit(nodes []slurmcli.Node, take func(i int) bool, ch chan<- prometheus.Metric) {
	byState := map[string]float64{}
	load := 0.0
	partLoad, partWeight := map[string]float64{}, map[string]float64{}
	for i, n := range nodes {
		if !take(i) {
			continue
		}
		byState[slurmLabel(n.State)] += n.CPUs
		l := 0.0 // a node whose slurmd has not reported adds nothing yet
		if n.CPULoadKnown {
			l = n.CPULoad
		}
		load += l
		inPart := map[string]bool{}
		for _, p := range n.Partitions {
			if p = slurmLabel(p); p == "" || inPart[p] {
				continue
			}
			inPart[p] = true
			partWeight[p] += n.Weight
			partLoad[p] += l
		}
	}
	for st, v := range byState {
		ch <- d.stateCPUs.Gauge(v, st)
	}
	ch <- d.load.Gauge(load)
	for p, v := range partLoad {
		ch <- d.partLoad.Gauge(v, p)
		ch <- d.partWeight.Gauge(partWeight[p], p)
	}
}
