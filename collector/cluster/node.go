// SPDX-License-Identifier: Apache-2.0

package cluster

import (
	"fmt"
	"sort"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/jobscope/jobscope/collector"
	"github.com/jobscope/jobscope/slurmcli"
)

// slurmNodeReasonMax bounds a node's reason and feature labels, in bytes:
// the reason is free text an admin typed (or slurmctld wrote), and a label
// value that changes length with every drain would make a new series per
// wording anyway, so the head of it is what matters.
const slurmNodeReasonMax = 80

// NodeFactory describes the per-node collector (controller mode).
// Its cost is stated: one info series and up to eight numeric series per
// node, about 18,000 series at 2,000 nodes; --collector.slurm_node=false
// turns the family off where that is too many.
func NodeFactory(sh *shared) collector.Factory {
	return slurmFactory(sh, "slurm_node",
		"One series set per node: state, drain/down reason, partitions and features, CPUs, memory and GPUs configured and allocated, load and free memory, from sinfo --json or scontrol show node (cached). 1 info and up to 8 numeric series per node (~18k series at 2,000 nodes)",
		slurmcli.SourceNodes, func(c *slurmcli.Cache) slurmCollector { return newSlurmNode(c) })
}

type slurmNode struct {
	cacheRef

	info                       *collector.Desc
	cpus, cpusAlloc            *collector.Desc
	memReal, memAlloc, memFree *collector.Desc
	gpus, gpusAlloc, load      *collector.Desc
}

func newSlurmNode(c *slurmcli.Cache) *slurmNode {
	const src = " From sinfo --json -N (or scontrol show node -o), cached per --slurm.poll-interval."
	d := func(name, help string, labels ...string) *collector.Desc {
		return collector.NewDesc(name, help+src, append([]string{"node"}, labels...)...)
	}
	return &slurmNode{
		cacheRef: cacheRef{c},
		info: d("slurm_cluster_node_info",
			"1 for each node, with its state (as slurm_cluster_nodes counts it), the reason it was drained or set down (control characters dropped, cut to 80 bytes; empty when none), its partitions and its available features (comma separated, sorted).",
			"state", "reason", "partitions", "features"),
		cpus:      d("slurm_cluster_node_cpus_configured", "CPUs of the node (CPUTot)."),
		cpusAlloc: d("slurm_cluster_node_cpus_allocated", "CPUs of the node allocated to jobs."),
		memReal:   d("slurm_cluster_node_memory_real_bytes", "Memory Slurm may give to jobs on the node (RealMemory)."),
		memAlloc:  d("slurm_cluster_node_memory_allocated_bytes", "Memory allocated to jobs on the node (AllocMem)."),
		memFree: d("slurm_cluster_node_memory_free_bytes",
			"Free memory as the node's operating system reports it to slurmd (FreeMem); absent until slurmd reports it."),
		gpus:      d("slurm_cluster_node_gpus_configured", "GPUs configured on the node (gres/gpu)."),
		gpusAlloc: d("slurm_cluster_node_gpus_allocated", "GPUs of the node allocated to jobs."),
		load:      d("slurm_cluster_node_cpu_load", "The node's 1-minute load average as slurmd reports it (CPULoad); absent until slurmd reports it."),
	}
}

func (c *slurmNode) descs() []*collector.Desc {
	return []*collector.Desc{c.info, c.cpus, c.cpusAlloc, c.memReal, c.memAlloc, c.memFree, c.gpus, c.gpusAlloc, c.load}
}

// Collect emits the node series. The source's up and age metrics are the
// slurm_nodes collector's to emit; this one only reads the same snapshot.
func (c *slurmNode) Collect(s *collector.Scrape, ch chan<- prometheus.Metric) error {
	nodes, ok, err := slurmcli.Serve(c.cache.Nodes.Get(s.Context()), c.cache.MaxAge())
	if !ok {
		return fmt.Errorf("slurm nodes: %w", err)
	}
	seen := make(map[string]bool, len(nodes))
	for _, n := range nodes {
		name := slurmLabel(n.Name)
		if seen[name] {
			continue // the slurm_nodes collector reports the duplicate
		}
		seen[name] = true
		g := func(d *collector.Desc, v float64) { ch <- d.Gauge(v, name) }
		ch <- c.info.Gauge(1, name, slurmLabel(n.State),
			slurmcli.BoundedText(n.Reason, slurmNodeReasonMax), slurmLabel(sortedList(n.Partitions)),
			slurmcli.BoundedText(sortedList(strings.Split(n.Features, ",")), slurmNodeReasonMax))
		g(c.cpus, n.CPUs)
		g(c.cpusAlloc, n.AllocCPUs)
		g(c.memReal, n.RealMemoryBytes)
		g(c.memAlloc, n.AllocMemoryBytes)
		if n.FreeMemoryKnown {
			g(c.memFree, n.FreeMemoryBytes)
		}
		g(c.gpus, n.GPUs)
		g(c.gpusAlloc, n.AllocGPUs)
		if n.CPULoadKnown {
			g(c.load, n.CPULoad)
		}
	}
	if err != nil {
		return fmt.Errorf("slurm nodes: %w", err)
	}
	return nil
}

// sortedList joins the non-empty items, sorted and without repeats, so a
// label does not change with the order Slurm lists them in.
func sortedList(items []string) string {
	var out []string
	seen := map[string]bool{}
	for _, x := range items {
		x = strings.TrimSpace(x)
		if x != "" && !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	sort.Strings(out)
	return strings.Join(out, ",")
}
