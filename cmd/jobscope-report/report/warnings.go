// SPDX-License-Identifier: Apache-2.0

package report

import (
	"fmt"
	"math"
	"sort"
	"strings"
)

// Warning ids: stable, documented in docs/report.md, counted by the usage
// summary.
const (
	wCPUVeryLow     = "cpu_efficiency_very_low"
	wCPULow         = "cpu_efficiency_low"
	wOOM            = "memory_oom_killed"
	wMemHigh        = "memory_near_limit"
	wMemLow         = "memory_overrequested"
	wGPUIdle        = "gpu_idle"
	wGPULow         = "gpu_utilization_low"
	wOneNode        = "multi_node_one_node_used"
	wImbalance      = "cpu_time_on_few_cores"
	wSmallIO        = "small_io"
	wQueueWait      = "queue_wait_for_little_use"
	wTimeLimitSlack = "time_limit_overestimated"
)

var severityRank = map[string]int{Critical: 0, Warn: 1, Info: 2}

// warningTitle says in a few words what each warning means (usage lists).
var warningTitle = map[string]string{
	wCPUVeryLow:     "CPU efficiency very low",
	wCPULow:         "CPU efficiency low",
	wOOM:            "killed for exceeding memory (OOM)",
	wMemHigh:        "memory peak near the request",
	wMemLow:         "much more memory requested than used",
	wGPUIdle:        "allocated GPU idle",
	wGPULow:         "GPU utilization low",
	wOneNode:        "multi-node job used one node",
	wImbalance:      "CPU time on a few of many cores",
	wSmallIO:        "many small reads/writes",
	wQueueWait:      "long queue wait for little use",
	wTimeLimitSlack: "time limit far above run time",
}

var warningSeverity = map[string]string{
	wCPUVeryLow: Critical, wCPULow: Warn, wOOM: Critical, wMemHigh: Warn, wMemLow: Warn, wGPUIdle: Critical,
	wGPULow: Warn, wOneNode: Warn, wImbalance: Warn, wSmallIO: Warn, wQueueWait: Warn, wTimeLimitSlack: Info,
}

// warnings judges a job report against the thresholds.
func warnings(rep *Report, t Thresholds, helpURL string) []Warning {
	var out []Warning
	add := func(w Warning) {
		w.Severity = warningSeverity[w.ID]
		if helpURL != "" {
			w.Advice += " More: " + helpURL
		}
		out = append(out, w)
	}
	long := rep.Job.ElapsedSeconds >= float64(t.MinElapsed)/1e9

	// Memory: an OOM kill is a fact at any length.
	oom := deref(rep.Memory.OOMKills)
	if oom > 0 || rep.Job.State == "OUT_OF_MEMORY" {
		msg := fmt.Sprintf("The kernel killed %s of the job's processes for exceeding the memory request (OOM kill).",
			map[bool]string{true: "one", false: num(oom)}[oom == 1])
		if oom == 0 {
			msg = "Slurm ended the job OUT_OF_MEMORY: it exceeded its memory request."
		}
		add(Warning{ID: wOOM, Severity: Critical, Message: msg, Value: oom,
			Advice: "Request more memory" + memSuggestion(rep, 1.5) + ", or make the program use less (smaller chunks, " +
				"fewer copies); check `sacct -j " + rep.Job.ID + " -o MaxRSS` for each step."})
	} else if r := rep.Memory.PeakRatio; r != nil && *r >= t.MemoryHigh {
		add(Warning{ID: wMemHigh, Severity: Warn, Value: *r, Threshold: t.MemoryHigh,
			Message: fmt.Sprintf("Memory peaked at %s of the request on its fullest node: close to an OOM kill.", pct(*r)),
			Advice:  "Request some headroom" + memSuggestion(rep, 1.2) + "."})
	}
	if r := rep.Memory.PeakRatio; r != nil && long && *r < t.MemoryLow && oom == 0 && maxNodeRequest(rep) >= t.MemoryLowMinRequest {
		add(Warning{ID: wMemLow, Severity: Warn, Value: *r, Threshold: t.MemoryLow,
			Message: fmt.Sprintf("The job used at most %s of the %s it requested per node (%s).",
				bytesStr(maxNodePeak(rep)), bytesStr(maxNodeRequest(rep)), pct(*r)),
			Advice: "Request less memory" + memSuggestion(rep, 1.25) + ": smaller requests start sooner and leave " +
				"the rest of the node to others."})
	}

	// CPU.
	if e := rep.CPU.Efficiency; e != nil && long && rep.CPU.Cores > 0 {
		used := deref(rep.CPU.CoresInUse)
		msg := fmt.Sprintf("The job kept %s of its %s allocated cores busy on average (CPU efficiency %s).",
			num(used), num(rep.CPU.Cores), pct(*e))
		need := math.Max(1, math.Ceil(used*1.25))
		advice := fmt.Sprintf("Request about %s (--ntasks/--cpus-per-task), or check that the program "+
			"really runs in parallel: threads (OMP_NUM_THREADS=$SLURM_CPUS_PER_TASK), MPI ranks started by srun.",
			plural(need, "one", "core", "cores"))
		switch {
		case *e < t.CPUEfficiencyVeryLow:
			add(Warning{ID: wCPUVeryLow, Severity: Critical, Value: *e, Threshold: t.CPUEfficiencyVeryLow, Message: msg, Advice: advice})
		case *e < t.CPUEfficiencyLow:
			add(Warning{ID: wCPULow, Severity: Warn, Value: *e, Threshold: t.CPUEfficiencyLow, Message: msg, Advice: advice})
		}
	}
	if b := rep.CPU.PerCore; b != nil && long && b.Cores >= t.ImbalanceMinCores &&
		float64(b.CoresFor90Percent) <= t.ImbalanceShare*float64(b.Cores) {
		add(Warning{ID: wImbalance, Severity: Warn, Node: b.Node, Value: float64(b.CoresFor90Percent) / float64(b.Cores),
			Threshold: t.ImbalanceShare,
			Message: fmt.Sprintf("On %s, 90%% of the CPU time ran on %d of the job's %d cores.",
				b.Node, b.CoresFor90Percent, b.Cores),
			Advice: "Either the program is serial (request fewer cores) or its threads are pinned to a few cores: " +
				"check OMP_PROC_BIND/OMP_PLACES, taskset or `srun --cpu-bind` settings."})
	}
	if len(rep.Nodes) > 1 && long {
		if idle := unusedNodes(rep.Nodes, t.NodeUnused); len(idle) == len(rep.Nodes)-1 {
			add(Warning{ID: wOneNode, Severity: Warn, Value: float64(len(rep.Nodes) - len(idle)),
				Message: fmt.Sprintf("Only one of the job's %d nodes did work; idle: %s.", len(rep.Nodes), strings.Join(idle, ", ")),
				Advice: "Request one node (-N1) unless the program really spans nodes: MPI programs must be started " +
					"with srun (or an MPI built with Slurm support) to reach the other nodes."})
		}
	}

	// GPUs.
	var idle []string
	worstIdle := 0.0
	for _, d := range rep.GPU.Devices {
		if d.IdleFraction != nil && *d.IdleFraction >= t.GPUIdleFraction {
			idle = append(idle, fmt.Sprintf("%s GPU %s (%s)", d.Node, gpuName(d), pct(*d.IdleFraction)))
			worstIdle = math.Max(worstIdle, *d.IdleFraction)
		}
	}
	idleGPUs := len(idle)
	if idleGPUs > 0 {
		add(Warning{ID: wGPUIdle, Value: worstIdle, Threshold: t.GPUIdleFraction,
			Message: fmt.Sprintf("%d of the job's %d GPUs sat idle (utilization at or under %s) most of the time: %s.",
				idleGPUs, rep.GPU.Count, pct(t.GPUIdleUtilization), strings.Join(idle, ", ")),
			Advice: "Request only the GPUs the program uses (--gres=gpu:N); check that it is GPU-enabled and " +
				"sees every GPU (CUDA_VISIBLE_DEVICES, the framework's device settings)."})
	}
	if u := rep.GPU.UtilizationMean; u != nil && long && idleGPUs == 0 && *u <= t.GPUUtilizationLow {
		add(Warning{ID: wGPULow, Severity: Warn, Value: *u, Threshold: t.GPUUtilizationLow,
			Message: fmt.Sprintf("The job's GPUs were busy %s of the time on average.", pct(*u)),
			Advice: "Feed the GPU larger batches, keep data loading off the critical path (more loader workers, " +
				"node-local data), or use a smaller GPU (MIG) if the site offers one."})
	}

	// IO.
	if rate, size := rep.IO.SyscallsPerSecond, rep.IO.BytesPerSyscall; rate != nil && size != nil && long &&
		*rate > t.SmallIORate && *size < t.SmallIOBytes {
		add(Warning{ID: wSmallIO, Severity: Warn, Value: *size, Threshold: t.SmallIOBytes,
			Message: fmt.Sprintf("The job made %s read/write calls per second of %s each on average.", num(*rate), bytesStr(*size)),
			Advice: "Read and write in larger blocks (buffered IO, 1 MiB or more per call), or keep small files on " +
				"node-local scratch ($TMPDIR) instead of the shared filesystem."})
	}

	// Queue and time limit (need sacct).
	slack := timeSlack(rep, t)
	if w := rep.Job.WaitSeconds; w != nil && *w >= float64(t.QueueWait)/1e9 {
		if unused := unusedRequests(rep, t, slack); len(unused) > 0 {
			add(Warning{ID: wQueueWait, Severity: Warn, Value: *w, Threshold: float64(t.QueueWait) / 1e9,
				Message: fmt.Sprintf("The job waited %s in the queue, for: %s.", fmtDuration(*w), strings.Join(unused, "; ")),
				Advice:  "Requests closer to the real need (with a margin) match more free slots and start sooner."})
		}
	}
	if slack != nil {
		add(Warning{ID: wTimeLimitSlack, Severity: Info, Value: *slack, Threshold: t.TimeLimitUsed,
			Message: fmt.Sprintf("The job ran %s of its %s time limit (%s).", fmtDuration(rep.Job.ElapsedSeconds),
				fmtDuration(*rep.Job.TimeLimitSeconds), pct(*slack)),
			Advice: "Set --time closer to the real run time (plus a margin): the backfill scheduler starts short jobs sooner."})
	}
	sort.SliceStable(out, func(i, j int) bool { return severityRank[out[i].Severity] < severityRank[out[j].Severity] })
	return out
}

// timeSlack is the share of the time limit an ended job used, when it is
// under the threshold.
func timeSlack(rep *Report, t Thresholds) *float64 {
	l := rep.Job.TimeLimitSeconds
	if rep.Job.Running || l == nil || *l <= 0 || rep.Job.State != "COMPLETED" {
		return nil
	}
	if used := rep.Job.ElapsedSeconds / *l; used < t.TimeLimitUsed {
		return &used
	}
	return nil
}

// unusedRequests lists what a job asked for and used little of.
func unusedRequests(rep *Report, t Thresholds, slack *float64) []string {
	var out []string
	if e := rep.CPU.Efficiency; e != nil && *e < t.CPUEfficiencyLow {
		out = append(out, fmt.Sprintf("%s cores, %s of them used", num(rep.CPU.Cores), pct(*e)))
	}
	if r := rep.Memory.PeakRatio; r != nil && *r < t.MemoryLow {
		out = append(out, fmt.Sprintf("%s of memory, %s used", bytesStr(deref(rep.Memory.RequestedBytes)), pct(*r)))
	}
	if slack != nil {
		out = append(out, fmt.Sprintf("a %s time limit, %s used", fmtDuration(*rep.Job.TimeLimitSeconds), pct(*slack)))
	}
	if rep.GPU.IdleCount > 0 {
		out = append(out, fmt.Sprintf("%d GPUs, %d of them idle", rep.GPU.Count, rep.GPU.IdleCount))
	}
	return out
}

func unusedNodes(nodes []Node, share float64) []string {
	var busiest float64
	for _, n := range nodes {
		busiest = math.Max(busiest, deref(n.CPUUsedSeconds))
	}
	var idle []string
	for _, n := range nodes {
		if deref(n.CPUUsedSeconds) < share*busiest {
			idle = append(idle, n.Name)
		}
	}
	return idle
}

func maxNodeRequest(rep *Report) float64 {
	var m float64
	for _, n := range rep.Nodes {
		m = math.Max(m, deref(n.MemoryRequestedBytes))
	}
	return m
}

func maxNodePeak(rep *Report) float64 {
	var m float64
	for _, n := range rep.Nodes {
		m = math.Max(m, deref(n.MemoryPeakBytes))
	}
	return m
}

// memSuggestion proposes a per-node --mem from the largest node's peak.
func memSuggestion(rep *Report, factor float64) string {
	peak := maxNodePeak(rep)
	if peak <= 0 {
		return ""
	}
	want := peak * factor
	if rep.Memory.OOMKills != nil && *rep.Memory.OOMKills > 0 {
		want = math.Max(want, maxNodeRequest(rep)*factor)
	}
	gib := want / (1 << 30)
	if gib >= 1 {
		return fmt.Sprintf(" (e.g. --mem=%.0fG per node)", math.Ceil(gib))
	}
	return fmt.Sprintf(" (e.g. --mem=%.0fM per node)", math.Ceil(want/(1<<20)/100)*100)
}

func gpuName(d GPUDevice) string {
	if d.MIGUUID != "" {
		return d.Index + " (MIG " + d.MIGUUID + ")"
	}
	return d.Index
}
