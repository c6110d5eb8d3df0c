// SPDX-License-Identifier: Apache-2.0

package slurmcli

import (
	"fmt"
	"strings"
)

// sinfoRecord is one record of the "sinfo" list that `sinfo --json`
// prints from 23.02 on (24.11 and 26.05 captured): a group of nodes of one
// partition that share a state. With -N (SinfoJSONArgs) each record holds
// one node, so its sums are that node's values.
type sinfoRecord struct {
	Nodes struct {
		Nodes []string `json:"nodes"`
	} `json:"nodes"`
	Node struct {
		State flexStrings `json:"state"`
	} `json:"node"`
	Partition struct {
		Name string `json:"name"`
	} `json:"partition"`
	CPUs struct {
		Allocated flexNum `json:"allocated"`
		Total     flexNum `json:"total"`
		Load      struct {
			Maximum flexNum `json:"maximum"`
		} `json:"load"`
	} `json:"cpus"`
	Memory struct {
		Maximum   flexNum `json:"maximum"`
		Allocated flexNum `json:"allocated"`
		Free      struct {
			Maximum flexNum `json:"maximum"`
		} `json:"free"`
	} `json:"memory"`
	Gres struct {
		Total string `json:"total"`
		Used  string `json:"used"`
	} `json:"gres"`
	Features struct {
		Total string `json:"total"`
	} `json:"features"`
	Reason struct {
		Description string `json:"description"`
	} `json:"reason"`
	Weight struct {
		Maximum flexNum `json:"maximum"`
	} `json:"weight"`
}

// nodesFromSinfoList turns node/partition records into one Node per node,
// its partitions gathered from every record that names it. A record of n
// nodes (sinfo without -N groups alike nodes) shares its CPU sums out
// evenly; its memory and load are per-node figures already.
func nodesFromSinfoList(recs []sinfoRecord) ([]Node, error) {
	var nodes []Node
	index := map[string]int{}
	for i, r := range recs {
		names := r.Nodes.Nodes
		if len(names) == 0 {
			return nil, fmt.Errorf("sinfo json: record %d names no node", i)
		}
		share := float64(len(names))
		for _, name := range names {
			if j, seen := index[name]; seen {
				if p := Clean(r.Partition.Name); p != "" {
					nodes[j].Partitions = append(nodes[j].Partitions, p)
				}
				continue
			}
			n := Node{
				Name:             name,
				CPUs:             r.CPUs.Total.V / share,
				AllocCPUs:        r.CPUs.Allocated.V / share,
				RealMemoryBytes:  r.Memory.Maximum.V * (1 << 20),
				AllocMemoryBytes: r.Memory.Allocated.V * (1 << 20),
				Reason:           r.Reason.Description,
				Features:         Clean(r.Features.Total),
				Weight:           r.Weight.Maximum.V,
			}
			if p := Clean(r.Partition.Name); p != "" {
				n.Partitions = []string{p}
			}
			if f := r.Memory.Free.Maximum; f.Set && f.V >= 0 && f.V < 1<<40 {
				n.FreeMemoryBytes, n.FreeMemoryKnown = f.V*(1<<20), true
			}
			if l := r.CPUs.Load.Maximum; l.Set {
				n.CPULoad, n.CPULoadKnown = loadHundredths(l.V)
			}
			base := ""
			if len(r.Node.State) > 0 {
				base = r.Node.State[0]
			}
			var flags []string
			if len(r.Node.State) > 1 {
				flags = r.Node.State[1:]
			}
			n.State, n.Available = NodeState(base, flags)
			n.GPUs, n.AllocGPUs = GresGPUs(r.Gres.Total), GresGPUs(r.Gres.Used)
			index[name] = len(nodes)
			nodes = append(nodes, n)
		}
	}
	return nodes, nil
}

// loadHundredths reads slurmd's load average as JSON gives it (175 for
// 1.75); NO_VAL and other out-of-range values mean "not reported yet".
func loadHundredths(v float64) (float64, bool) {
	if v < 0 || v >= 1<<31 {
		return 0, false
	}
	return v / 100, true
}

// scontrolReason drops the " [user@time]" scontrol appends to a node's
// reason, so that the text form gives what JSON's reason field gives.
func scontrolReason(s string) string {
	s = strings.TrimSpace(Clean(s))
	if i := strings.LastIndex(s, " ["); i >= 0 && strings.HasSuffix(s, "]") && strings.Contains(s[i:], "@") {
		s = s[:i]
	}
	return s
}
