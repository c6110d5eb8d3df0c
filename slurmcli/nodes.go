// SPDX-License-Identifier: Apache-2.0

package slurmcli

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Node is one node as sinfo --json or scontrol show node -o describe it.
type Node struct {
	Name       string
	State      string // normalised: see NodeState
	Partitions []string

	CPUs      float64
	AllocCPUs float64
	// Available says whether the node's unallocated CPUs can take work
	// (not down, drained, failing, in maintenance or not responding).
	Available bool

	RealMemoryBytes  float64
	AllocMemoryBytes float64 // Slurm's AllocMem: what jobs were given
	FreeMemoryBytes  float64 // slurmd's report of the OS's free memory
	FreeMemoryKnown  bool

	GPUs      float64
	AllocGPUs float64

	// Reason is why an admin or slurmctld took the node out of service
	// (drain, down), without scontrol's " [user@time]" suffix.
	Reason       string
	Features     string  // available features, comma separated
	CPULoad      float64 // slurmd's 1-minute load average
	CPULoadKnown bool
	Weight       float64 // scheduling weight
}

// IdleCPUs and OtherCPUs split the unallocated CPUs the way sinfo's
// "A/I/O/T" does: idle ones can run jobs, other ones sit on unusable nodes.
func (n Node) IdleCPUs() float64 {
	if !n.Available {
		return 0
	}
	return max(n.CPUs-n.AllocCPUs, 0)
}

// OtherCPUs are unallocated CPUs on nodes that cannot take work.
func (n Node) OtherCPUs() float64 {
	if n.Available {
		return 0
	}
	return max(n.CPUs-n.AllocCPUs, 0)
}

// NodeState folds Slurm's base state and flags into one label value,
// counting each node once: drained, draining, fail, failing, down, maint,
// reserved, powered_down, powering_down, powering_up, else the base state in
// lower case (allocated, mixed, idle, completing, future, unknown, ...).
// available says whether unallocated CPUs can run jobs.
func NodeState(base string, flags []string) (state string, available bool) {
	base = strings.ToLower(strings.TrimRight(strings.TrimSpace(base), "*~#!%$@^-"))
	if base == "" {
		base = "unknown"
	}
	has := map[string]bool{}
	for _, f := range flags {
		has[strings.ToUpper(strings.TrimSpace(f))] = true
	}
	busy := base == "allocated" || base == "mixed" || base == "completing" || has["COMPLETING"]
	unresponsive := has["NOT_RESPONDING"]
	switch {
	case has["DRAIN"] || has["DRAINING"] || has["DRAINED"]:
		if busy {
			return "draining", false
		}
		return "drained", false
	case has["FAIL"]:
		if busy {
			return "failing", false
		}
		return "fail", false
	case base == "down" || base == "error":
		return base, false
	case has["MAINTENANCE"] || has["MAINT"]:
		return "maint", false
	case has["RESERVED"]:
		return "reserved", !unresponsive
	case has["POWERED_DOWN"]:
		return "powered_down", !unresponsive
	case has["POWERING_DOWN"]:
		return "powering_down", false
	case has["POWERING_UP"]:
		return "powering_up", !unresponsive
	case base == "future" || base == "unknown":
		return base, false
	}
	return base, !unresponsive
}

// SinfoJSONArgs are the arguments for `sinfo --json`. 22.05 prints a
// "nodes" list whatever the options; 23.02 and later print "sinfo" records
// grouped like sinfo's text, which -N makes one per node and partition
// (without it a record's allocated memory is one of its nodes').
var SinfoJSONArgs = []string{"--json", "-N"}

// ScontrolNodeArgs are the arguments of the text form of the node list:
// scontrol, not sinfo, because only it prints AllocMem in 22.05's text.
// Options come first, as scontrol documents them (the 22.05 capture was
// taken as `scontrol show node -o`, the same output).
var ScontrolNodeArgs = []string{"-o", "show", "node"}

type sinfoJSON struct {
	Errors slurmErrors `json:"errors"`
	Nodes  []struct {
		Name        string      `json:"name"`
		State       flexStrings `json:"state"`
		StateFlags  []string    `json:"state_flags"`
		Partitions  []string    `json:"partitions"`
		CPUs        flexNum     `json:"cpus"`
		AllocCPUs   flexNum     `json:"alloc_cpus"`
		RealMemory  flexNum     `json:"real_memory"`
		AllocMemory flexNum     `json:"alloc_memory"`
		FreeMemory  flexNum     `json:"free_memory"`
		FreeMem     flexNum     `json:"free_mem"` // later versions' name
		Tres        string      `json:"tres"`
		TresUsed    string      `json:"tres_used"`
		Gres        string      `json:"gres"`
		GresUsed    string      `json:"gres_used"`
		Reason      string      `json:"reason"`
		Features    flexStrings `json:"features"`
		CPULoad     flexNum     `json:"cpu_load"`
		Weight      flexNum     `json:"weight"`
	} `json:"nodes"`
	// Sinfo is the node/partition record list of 23.02 and later.
	Sinfo []sinfoRecord `json:"sinfo"`
}

// ParseSinfoJSON reads `sinfo --json` output.
func ParseSinfoJSON(r io.Reader) ([]Node, error) {
	return parseSinfoJSON(r, nil)
}

// parseSinfoJSON is ParseSinfoJSON handing the fields beside the list to
// top when set (slurmrestd's /nodes answer: see restdTop).
func parseSinfoJSON(r io.Reader, top *restdTop) ([]Node, error) {
	var in struct {
		sinfoJSON
		LastUpdate flexNum        `json:"last_update"`
		Warnings   []restdWarning `json:"warnings"`
	}
	if err := json.NewDecoder(r).Decode(&in); err != nil {
		return nil, fmt.Errorf("sinfo json: %w", err)
	}
	if top != nil {
		top.LastUpdate, top.Warnings, top.Errors = in.LastUpdate, in.Warnings, in.Errors
	}
	if in.Nodes == nil && in.Sinfo != nil {
		return nodesFromSinfoList(in.Sinfo)
	}
	if in.Nodes == nil {
		if err := in.Errors.err(); err != nil {
			return nil, fmt.Errorf("sinfo json: %w", err)
		}
		return nil, fmt.Errorf("sinfo json: neither a \"nodes\" nor an \"sinfo\" list: %w", ErrJSONShape)
	}
	nodes := make([]Node, 0, len(in.Nodes))
	for _, x := range in.Nodes {
		base := ""
		flags := append([]string(nil), x.StateFlags...)
		if len(x.State) > 0 {
			base = x.State[0]
			flags = append(flags, x.State[1:]...)
		}
		n := Node{
			Name:             x.Name,
			Partitions:       x.Partitions,
			CPUs:             x.CPUs.V,
			AllocCPUs:        x.AllocCPUs.V,
			RealMemoryBytes:  x.RealMemory.V * (1 << 20),
			AllocMemoryBytes: x.AllocMemory.V * (1 << 20),
		}
		// slurmd reports NO_VAL (as a huge or negative number) before it
		// has measured free memory.
		if !x.FreeMemory.Set {
			x.FreeMemory = x.FreeMem
		}
		if x.FreeMemory.Set && x.FreeMemory.V >= 0 && x.FreeMemory.V < 1<<40 {
			n.FreeMemoryBytes, n.FreeMemoryKnown = x.FreeMemory.V*(1<<20), true
		}
		n.State, n.Available = NodeState(base, flags)
		n.GPUs, n.AllocGPUs = nodeGPUs(x.Tres, x.TresUsed, x.Gres, x.GresUsed)
		n.Reason, n.Features, n.Weight = x.Reason, strings.Join(x.Features, ","), x.Weight.V
		if x.CPULoad.Set {
			n.CPULoad, n.CPULoadKnown = loadHundredths(x.CPULoad.V)
		}
		nodes = append(nodes, n)
	}
	return nodes, nil
}

// nodeGPUs takes GPU counts from TRES when it lists them, else from gres.
func nodeGPUs(tres, tresUsed, gres, gresUsed string) (total, alloc float64) {
	if t, err := ParseTRES(tres); err == nil && strings.Contains(tres, "gres/gpu") {
		total = t.GPUs
		if u, err := ParseTRES(tresUsed); err == nil {
			alloc = u.GPUs
		}
		return total, alloc
	}
	return GresGPUs(gres), GresGPUs(gresUsed)
}

// ParseScontrolNodes reads `scontrol show node -o` output.
func ParseScontrolNodes(r io.Reader) ([]Node, error) {
	recs, err := ParseScontrolRecords(r)
	if err != nil {
		return nil, err
	}
	nodes := make([]Node, 0, len(recs))
	for i, f := range recs {
		name := f["NodeName"]
		if name == "" {
			return nil, fmt.Errorf("scontrol node record %d: no NodeName", i+1)
		}
		n := Node{Name: name}
		num := func(key string) (float64, bool) {
			v, err := strconv.ParseFloat(f[key], 64)
			return v, err == nil
		}
		var ok bool
		if n.CPUs, ok = num("CPUTot"); !ok {
			return nil, fmt.Errorf("node %s: CPUTot %q", name, f["CPUTot"])
		}
		n.AllocCPUs, _ = num("CPUAlloc")
		if v, ok := num("RealMemory"); ok {
			n.RealMemoryBytes = v * (1 << 20)
		}
		if v, ok := num("AllocMem"); ok {
			n.AllocMemoryBytes = v * (1 << 20)
		}
		if v, ok := num("FreeMem"); ok && v >= 0 {
			n.FreeMemoryBytes, n.FreeMemoryKnown = v*(1<<20), true
		}
		if p := f["Partitions"]; p != "" && p != "(null)" {
			n.Partitions = strings.Split(p, ",")
		}
		parts := strings.Split(f["State"], "+")
		n.State, n.Available = NodeState(parts[0], parts[1:])
		n.GPUs, n.AllocGPUs = nodeGPUs(f["CfgTRES"], f["AllocTRES"], f["Gres"], f["GresUsed"])
		n.Reason, n.Features = scontrolReason(f["Reason"]), Clean(f["AvailableFeatures"])
		n.Weight, _ = num("Weight")
		n.CPULoad, n.CPULoadKnown = num("CPULoad") // "N/A" before slurmd reports
		nodes = append(nodes, n)
	}
	return nodes, nil
}
