// SPDX-License-Identifier: Apache-2.0

package power

import (
	"math"
	"sort"
	"sync"
	"time"
)

// Source names the per-job energy series (label source=...).
type Source string

const (
	SourceCPU  Source = "rapl_cpu"  // RAPL package zones, by CPU time
	SourceDRAM Source = "rapl_dram" // RAPL dram zones, by memory
	SourceNode Source = "ipmi"      // BMC node power minus GPUs, by CPU time
	SourceGPU  Source = "gpu"       // GPUs held by the job
)

// JobSample is a job's cumulative usage at one scrape.
type JobSample struct {
	ID          string
	CPUSeconds  float64 // cumulative CPU time of the job's cgroup
	MemoryBytes float64 // memory in use now
}

// Sample is one scrape's readings. Energy fields are monotonic counters
// (RAPL readings summed over zones); NodeWatts is a power (integrated here).
type Sample struct {
	At     time.Time
	CPUs   float64
	Memory float64

	CPUJoules, DRAMJoules float64
	HasCPU, HasDRAM       bool
	NodeWatts             float64
	HasNode               bool

	GPUs   []GPUDevice
	HasGPU bool

	// Factor is the grid's emission factor in g/kWh (HasFactor false: none).
	Factor    float64
	HasFactor bool

	Jobs []JobSample
}

// JobTotals are a job's counters since the ledger first saw it.
type JobTotals struct {
	Joules JobEnergy
	Grams  float64
}

// Of returns the energy of one source.
func (e JobEnergy) Of(s Source) float64 {
	switch s {
	case SourceCPU:
		return e.CPU
	case SourceDRAM:
		return e.DRAM
	case SourceNode:
		return e.Node
	case SourceGPU:
		return e.GPU
	}
	return 0
}

// Ledger turns successive samples into per-job monotonic counters. It keeps
// a job's counters while the job is seen; a job unseen for Forget is
// dropped (a job missing from one scrape keeps its counters).
type Ledger struct {
	Policy Policy
	// MaxNodeGap: IPMI gives power at sample times only; over a longer gap
	// the trapezoid says little, so that interval's node energy is skipped.
	MaxNodeGap time.Duration
	Forget     time.Duration

	mu   sync.Mutex
	prev *Sample
	jobs map[string]*jobAcct
	gpus map[string]float64
	// rest is node energy measured while jobscope ran but given to no job
	// (idle under the capacity policy, GPUs nobody held, jobs gone).
	rest JobEnergy
}

type jobAcct struct {
	cpu, mem float64
	seen     time.Time
	totals   JobTotals
}

// NewLedger builds a ledger with the usual limits.
func NewLedger(p Policy) *Ledger {
	return &Ledger{Policy: p, MaxNodeGap: 5 * time.Minute, Forget: 15 * time.Minute, jobs: map[string]*jobAcct{}, gpus: map[string]float64{}}
}

// Step accounts the interval since the previous sample and returns the
// totals of the jobs in s (in s's order). The first sample only sets the
// baseline. A sample not later than the previous one changes nothing.
func (l *Ledger) Step(s Sample) []JobTotals {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.prev != nil && !s.At.After(l.prev.At) {
		return l.totalsOf(s.Jobs)
	}
	first := l.prev == nil
	uses := make([]JobUse, len(s.Jobs))
	accts := make([]*jobAcct, len(s.Jobs))
	for i, j := range s.Jobs {
		a := l.jobs[j.ID]
		switch {
		case a == nil:
			a = &jobAcct{}
			l.jobs[j.ID] = a
			if !first {
				// Discovery sees every job at every scrape, so a job new
				// since the last one started inside this interval: all its
				// CPU time belongs to it.
				uses[i] = JobUse{CPUSeconds: j.CPUSeconds, MemoryBytes: j.MemoryBytes / 2}
			}
		case j.CPUSeconds < a.cpu:
			// The CPU counter went back: a new cgroup under a reused job id.
			*a = jobAcct{}
		default:
			uses[i] = JobUse{CPUSeconds: j.CPUSeconds - a.cpu, MemoryBytes: (j.MemoryBytes + a.mem) / 2}
		}
		a.cpu, a.mem, a.seen = j.CPUSeconds, j.MemoryBytes, s.At
		accts[i] = a
	}
	gpuDelta := l.gpuDeltas(s)
	if !first {
		in := l.interval(s, gpuDelta)
		if in.HasGPU {
			idx := map[string]int{}
			for i, j := range s.Jobs {
				idx[j.ID] = i
			}
			for _, d := range s.GPUs {
				if i, ok := idx[d.JobID]; ok && d.JobID != "" {
					uses[i].GPUJoules += gpuDelta[d.ID]
				}
			}
		}
		given := JobEnergy{}
		for i, e := range Attribute(l.Policy, in, uses) {
			given.CPU += e.CPU
			given.DRAM += e.DRAM
			given.Node += e.Node
			given.GPU += e.GPU
			t := &accts[i].totals
			t.Joules.CPU += e.CPU
			t.Joules.DRAM += e.DRAM
			t.Joules.Node += e.Node
			t.Joules.GPU += e.GPU
			whole := e.CPU + e.DRAM + e.GPU
			if in.HasNode {
				whole = e.Node + e.GPU // the whole-node view replaces CPU+DRAM
			}
			if s.HasFactor {
				t.Grams += whole / 3.6e6 * s.Factor
			}
		}
		l.rest.CPU += max(in.CPUJoules-given.CPU, 0)
		l.rest.DRAM += max(in.DRAMJoules-given.DRAM, 0)
		l.rest.GPU += max(in.GPUJoules-given.GPU, 0)
		if in.HasNode {
			l.rest.Node += max(in.NodeJoules-in.GPUJoules-given.Node, 0)
		}
	}
	for id, a := range l.jobs {
		if s.At.Sub(a.seen) > l.Forget {
			delete(l.jobs, id)
		}
	}
	cp := s
	cp.Jobs, cp.GPUs = nil, nil
	l.prev = &cp
	return l.totalsOf(s.Jobs)
}

// gpuDeltas updates the per-device baselines and returns each device's
// energy since the previous sample (0 after a counter restart).
func (l *Ledger) gpuDeltas(s Sample) map[string]float64 {
	d := map[string]float64{}
	seen := map[string]bool{}
	for _, g := range s.GPUs {
		seen[g.ID] = true
		if p, ok := l.gpus[g.ID]; ok && g.Joules >= p {
			d[g.ID] = g.Joules - p
		}
		l.gpus[g.ID] = g.Joules
	}
	for id := range l.gpus {
		if !seen[id] {
			delete(l.gpus, id)
		}
	}
	return d
}

func (l *Ledger) interval(s Sample, gpu map[string]float64) Interval {
	p := l.prev
	dt := s.At.Sub(p.At)
	in := Interval{Seconds: dt.Seconds(), CPUs: s.CPUs, Memory: s.Memory}
	if s.HasCPU && p.HasCPU && s.CPUJoules >= p.CPUJoules {
		in.CPUJoules, in.HasCPU = s.CPUJoules-p.CPUJoules, true
	}
	if s.HasDRAM && p.HasDRAM && s.DRAMJoules >= p.DRAMJoules {
		in.DRAMJoules, in.HasDRAM = s.DRAMJoules-p.DRAMJoules, true
	}
	if s.HasNode && p.HasNode && dt <= l.MaxNodeGap {
		in.NodeJoules, in.HasNode = (s.NodeWatts+p.NodeWatts)/2*dt.Seconds(), true
	}
	if s.HasGPU {
		in.HasGPU = true
		ids := make([]string, 0, len(gpu))
		for id := range gpu {
			ids = append(ids, id)
		}
		sort.Strings(ids) // a fixed order keeps the float sum reproducible
		for _, id := range ids {
			in.GPUJoules += gpu[id]
		}
	}
	if math.IsNaN(in.CPUJoules + in.DRAMJoules + in.NodeJoules + in.GPUJoules) {
		return Interval{Seconds: in.Seconds}
	}
	return in
}

func (l *Ledger) totalsOf(jobs []JobSample) []JobTotals {
	out := make([]JobTotals, len(jobs))
	for i, j := range jobs {
		if a := l.jobs[j.ID]; a != nil {
			out[i] = a.totals
		}
	}
	return out
}

// Unattributed returns, per source, the node energy measured since the
// ledger started that no job was given: together with the jobs' counters it
// adds up to what the node measured over the intervals the ledger saw.
func (l *Ledger) Unattributed() JobEnergy {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.rest
}
