// SPDX-License-Identifier: Apache-2.0

package cluster

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/jobscope/jobscope/collector"
	"github.com/jobscope/jobscope/slurmcli"
)

// NodesFactory describes the cluster node collector (controller mode).
func NodesFactory(sh *shared) collector.Factory {
	return slurmFactory(sh, "slurm_nodes",
		"Cluster nodes by state, CPUs, memory and GPUs, overall and per partition, from sinfo --json or scontrol show node (cached)",
		slurmcli.SourceNodes, func(c *slurmcli.Cache) slurmCollector { return newSlurmNodes(c) })
}

type slurmNodes struct {
	source

	nodes, partNodes                     *collector.Desc
	cpus, partCPUs                       *collector.Desc
	cpusCfg, partCPUsCfg                 *collector.Desc
	memReal, memAlloc, memFree           *collector.Desc
	partMemReal, partMemAlloc            *collector.Desc
	gpus, gpusAlloc, partGPUs, partGAllo *collector.Desc
	state                                slurmNodeStateDescs
}

func newSlurmNodes(c *slurmcli.Cache) *slurmNodes {
	const src = " From sinfo --json (or scontrol show node -o), cached per --slurm.poll-interval."
	const perPart = " A node in several partitions counts in each of them."
	d := func(name, help string, labels ...string) *collector.Desc {
		return collector.NewDesc(name, help+src, labels...)
	}
	return &slurmNodes{
		source: newSource(c),
		nodes: d("slurm_cluster_nodes",
			"Nodes by state, each node counted once: allocated, mixed, idle, completing, down, drained, draining, fail, failing, maint, reserved, powered_down, powering_up, ...", "state"),
		partNodes: d("slurm_cluster_partition_nodes", "Nodes by partition and state."+perPart, "partition", "state"),
		cpus: d("slurm_cluster_cpus",
			"CPUs by state: allocated to jobs, idle (usable), other (unallocated on nodes that are down, drained, failing or in maintenance), as sinfo's A/I/O.", "state"),
		partCPUs:    d("slurm_cluster_partition_cpus", "CPUs by partition and state (allocated, idle, other)."+perPart, "partition", "state"),
		cpusCfg:     d("slurm_cluster_cpus_configured", "CPUs of all nodes (CPUTot)."),
		partCPUsCfg: d("slurm_cluster_partition_cpus_configured", "CPUs of the partition's nodes."+perPart, "partition"),
		memReal:     d("slurm_cluster_memory_real_bytes", "Memory Slurm may give to jobs (RealMemory of all nodes)."),
		memAlloc:    d("slurm_cluster_memory_allocated_bytes", "Memory allocated to jobs (Slurm's AllocMem, not the OS's view)."),
		memFree: d("slurm_cluster_memory_free_bytes",
			"Free memory as the nodes' operating systems report it to slurmd (FreeMem; page cache counts as used), for nodes that report it."),
		partMemReal:  d("slurm_cluster_partition_memory_real_bytes", "RealMemory of the partition's nodes."+perPart, "partition"),
		partMemAlloc: d("slurm_cluster_partition_memory_allocated_bytes", "AllocMem of the partition's nodes."+perPart, "partition"),
		gpus:         d("slurm_cluster_gpus_configured", "GPUs configured on all nodes (gres/gpu in the node TRES)."),
		gpusAlloc:    d("slurm_cluster_gpus_allocated", "GPUs allocated to jobs (gres/gpu in the nodes' allocated TRES)."),
		partGPUs:     d("slurm_cluster_partition_gpus_configured", "GPUs configured on the partition's nodes."+perPart, "partition"),
		partGAllo:    d("slurm_cluster_partition_gpus_allocated", "GPUs allocated on the partition's nodes."+perPart, "partition"),
		state:        newSlurmNodeStateDescs(),
	}
}

type slurmNodeSums struct {
	alloc, idle, other, cfg float64
	memReal, memAlloc       float64
	gpus, gpusAlloc         float64
	byState                 map[string]float64
}

func (n *slurmNodeSums) add(x slurmcli.Node) {
	n.alloc += x.AllocCPUs
	n.idle += x.IdleCPUs()
	n.other += x.OtherCPUs()
	n.cfg += x.CPUs
	n.memReal += x.RealMemoryBytes
	n.memAlloc += x.AllocMemoryBytes
	n.gpus += x.GPUs
	n.gpusAlloc += x.AllocGPUs
	n.byState[x.State]++
}

func (c *slurmNodes) Collect(s *collector.Scrape, ch chan<- prometheus.Metric) error {
	nodes, ok, err := read(c.status, s, c.cache, c.cache.Nodes, slurmcli.SourceNodes, ch)
	if !ok {
		return err
	}
	all := &slurmNodeSums{byState: map[string]float64{}}
	parts := map[string]*slurmNodeSums{}
	var free float64
	freeKnown := false
	seen := map[string]bool{}
	taken := make([]bool, len(nodes))
	for i, n := range nodes {
		if seen[n.Name] {
			s.Problem("duplicate_node", fmt.Errorf("node %q listed twice", n.Name))
			continue
		}
		seen[n.Name] = true
		taken[i] = true
		all.add(n)
		if n.FreeMemoryKnown {
			free += n.FreeMemoryBytes
			freeKnown = true
		}
		inPart := map[string]bool{}
		for _, p := range n.Partitions {
			if p == "" || inPart[p] {
				continue
			}
			inPart[p] = true
			ps := parts[p]
			if ps == nil {
				ps = &slurmNodeSums{byState: map[string]float64{}}
				parts[p] = ps
			}
			ps.add(n)
		}
	}
	g := func(d *collector.Desc, v float64, lv ...string) {
		for i := range lv {
			lv[i] = slurmLabel(lv[i])
		}
		ch <- d.Gauge(v, lv...)
	}
	for st, n := range all.byState {
		g(c.nodes, n, st)
	}
	g(c.cpus, all.alloc, "allocated")
	g(c.cpus, all.idle, "idle")
	g(c.cpus, all.other, "other")
	g(c.cpusCfg, all.cfg)
	g(c.memReal, all.memReal)
	g(c.memAlloc, all.memAlloc)
	if freeKnown {
		g(c.memFree, free)
	}
	g(c.gpus, all.gpus)
	g(c.gpusAlloc, all.gpusAlloc)
	for p, ps := range parts {
		for st, n := range ps.byState {
			g(c.partNodes, n, p, st)
		}
		g(c.partCPUs, ps.alloc, p, "allocated")
		g(c.partCPUs, ps.idle, p, "idle")
		g(c.partCPUs, ps.other, p, "other")
		g(c.partCPUsCfg, ps.cfg, p)
		g(c.partMemReal, ps.memReal, p)
		g(c.partMemAlloc, ps.memAlloc, p)
		g(c.partGPUs, ps.gpus, p)
		g(c.partGAllo, ps.gpusAlloc, p)
	}
	c.state.emit(nodes, func(i int) bool { return taken[i] }, ch)
	return err
}

func (c *slurmNodes) descs() []*collector.Desc {
	return append([]*collector.Desc{c.status.up, c.status.age, c.nodes, c.partNodes, c.cpus, c.partCPUs, c.cpusCfg, c.partCPUsCfg,
		c.memReal, c.memAlloc, c.memFree, c.partMemReal, c.partMemAlloc, c.gpus, c.gpusAlloc, c.partGPUs, c.partGAllo}, c.state.list()...)
}
