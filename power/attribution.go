// SPDX-License-Identifier: Apache-2.0

package power

import (
	"fmt"
	"math"
)

// Policy says who pays for the power a node draws beyond what its jobs use
// (idle cores, OS, unallocated memory). See docs/energy.md.
type Policy string

const (
	// PolicyCapacity charges a job its share of the node's capacity: CPU
	// seconds over (interval x online CPUs), memory over node memory. A
	// job using the whole node gets all its energy; what no job used stays
	// unattributed. Conservative: the sum over jobs is what they used.
	PolicyCapacity Policy = "capacity"
	// PolicyJobs splits all measured energy among the jobs present, in
	// proportion to their CPU seconds (memory for DRAM): idle power is
	// charged to whoever runs. Nothing stays unattributed while any job
	// used the resource.
	PolicyJobs Policy = "jobs"
)

// ParsePolicy checks a --collector.power.idle-policy value.
func ParsePolicy(s string) (Policy, error) {
	switch Policy(s) {
	case PolicyCapacity, PolicyJobs:
		return Policy(s), nil
	}
	return "", fmt.Errorf("unknown idle policy %q (want %q or %q)", s, PolicyCapacity, PolicyJobs)
}

// Shares returns each user's fraction of a resource. capacity is what the
// node offered in the interval (CPU seconds, or bytes); it matters only for
// PolicyCapacity. The shares are never negative and never add up to more
// than 1, whatever the input (accounting jitter can make the jobs' CPU
// seconds exceed the interval's capacity by a little: then they are scaled
// down to exactly the capacity).
func Shares(p Policy, used []float64, capacity float64) []float64 {
	out := make([]float64, len(used))
	var sum float64
	for _, u := range used {
		if u > 0 && !math.IsInf(u, 0) {
			sum += u
		}
	}
	if sum <= 0 {
		return out
	}
	denom := sum
	if p == PolicyCapacity && capacity > sum {
		denom = capacity
	}
	for i, u := range used {
		if u > 0 && !math.IsInf(u, 0) {
			out[i] = u / denom
		}
	}
	return out
}

// Split gives total to each user in proportion to shares, and guarantees
// that the parts add up to no more than total in floating point too (the
// largest part gives up the rounding excess).
func Split(total float64, shares []float64) []float64 {
	parts := make([]float64, len(shares))
	if !(total > 0) || math.IsInf(total, 0) {
		return parts
	}
	for i, s := range shares {
		parts[i] = total * s
	}
	for range 64 {
		var sum float64
		big := -1
		for i, v := range parts {
			sum += v
			if big < 0 || v > parts[big] {
				big = i
			}
		}
		if sum <= total || big < 0 {
			break
		}
		parts[big] = math.Max(0, math.Nextafter(parts[big]-(sum-total), 0))
	}
	return parts
}

// Interval is what the node measured between two scrapes.
type Interval struct {
	Seconds float64 // wall-clock length
	CPUs    float64 // online CPUs (capacity of CPU time per second)
	Memory  float64 // node memory in bytes

	// Energy in joules per meter; Has* false when the meter gave nothing
	// for the whole interval.
	CPUJoules, DRAMJoules, NodeJoules float64
	HasCPU, HasDRAM, HasNode          bool
	// GPUJoules is the energy of every GPU of the node in the interval,
	// held by a job or not (needed to take GPUs out of the node's energy).
	GPUJoules float64
	HasGPU    bool
}

// JobUse is what one job used in the interval.
type JobUse struct {
	CPUSeconds  float64
	MemoryBytes float64 // average over the interval
	GPUJoules   float64 // measured energy of the GPUs it held
}

// JobEnergy is one job's energy in the interval, per source.
type JobEnergy struct {
	CPU, DRAM, Node, GPU float64
}

// Attribute splits one interval's energy among jobs:
//   - CPU (RAPL package zones) by CPU-time share;
//   - DRAM (RAPL dram zones) by memory share;
//   - GPU: each GPU's measured energy to the job holding it (given);
//   - Node (IPMI): the node's energy minus all GPU energy, by CPU-time
//     share; it is an alternative to CPU+DRAM, not an addition.
//
// For every source, the sum over jobs never exceeds the node's figure.
func Attribute(p Policy, in Interval, jobs []JobUse) []JobEnergy {
	out := make([]JobEnergy, len(jobs))
	cpu := make([]float64, len(jobs))
	mem := make([]float64, len(jobs))
	for i, j := range jobs {
		cpu[i], mem[i] = j.CPUSeconds, j.MemoryBytes
	}
	cpuShares := Shares(p, cpu, in.Seconds*in.CPUs)
	memShares := Shares(p, mem, in.Memory)
	if in.HasCPU {
		for i, v := range Split(in.CPUJoules, cpuShares) {
			out[i].CPU = v
		}
	}
	if in.HasDRAM {
		for i, v := range Split(in.DRAMJoules, memShares) {
			out[i].DRAM = v
		}
	}
	if in.HasNode {
		rest := in.NodeJoules
		if in.HasGPU {
			rest -= in.GPUJoules
		}
		for i, v := range Split(math.Max(rest, 0), cpuShares) {
			out[i].Node = v
		}
	}
	if in.HasGPU {
		gpu := make([]float64, len(jobs))
		for i, j := range jobs {
			gpu[i] = math.Max(j.GPUJoules, 0)
		}
		// The ledger gives each GPU to one job, so this is a no-op unless
		// the GPU source double-books a device; then it caps the sum.
		var sum float64
		for _, g := range gpu {
			sum += g
		}
		if sum > in.GPUJoules && sum > 0 {
			gpu = Split(in.GPUJoules, Shares(PolicyJobs, gpu, 0))
		}
		for i, v := range gpu {
			out[i].GPU = v
		}
	}
	return out
}
