// SPDX-License-Identifier: Apache-2.0

package report

import (
	"context"
	"sort"
)

// figureQueries are the instant queries behind the job's figures. Counters
// start at 0 with the job's cgroup, so their largest value is the job's
// total; the exporter's counters never go back within a job. A job's
// series can change labels once in its life (user and account filled in
// after the first scrapes): per node and label, queries take the largest
// value over both, never their sum, and means come from subqueries over
// the per-node value.
func figureQueries(s scope, ownJob bool, t Thresholds) map[string]string {
	q := map[string]string{
		"cpu":       s.agg("max", s.over("max_over_time", mCPUUsage)),
		"cpu_mode":  s.agg("max", s.over("max_over_time", mCPUMode), "mode"),
		"cpus":      s.agg("max", s.over("max_over_time", mCPUs)),
		"cores":     s.agg("max", s.over("max_over_time", mCPUCore), "core"),
		"throttled": s.agg("max", s.over("max_over_time", mCPUThrottled)),
		"mem_peak":  s.agg("max", s.over("max_over_time", mMemPeak)),
		"mem_limit": s.agg("max", s.over("max_over_time", mMemLimit)),
		"mem_mean":  s.agg("max", s.subquery("avg_over_time", s.agg("max", s.sel(mMemUsage)))),
		"mem_stat":  s.agg("max", s.over("max_over_time", mMemStat, "type", "~anon|file"), "type"),
		"swap":      s.agg("max", s.over("max_over_time", mMemSwap)),
		"oom":       s.agg("max", s.over("max_over_time", mMemEvents, "event", evOOMKill)),
		"psi":       s.agg("max", s.over("max_over_time", mPressure, "level", "some"), "resource"),
		"block":     s.agg("sum", s.agg("max", s.over("max_over_time", mBlockIO), "direction", "device"), "direction"),
		"storage":   s.agg("max", s.over("max_over_time", mStorageIO), "direction"),
		"pstorage":  s.agg("max", s.over("max_over_time", mProcStorageIO), "direction"),
		"sysbytes":  s.agg("max", s.over("max_over_time", mSyscallIO), "direction"),
		"psysbytes": s.agg("max", s.over("max_over_time", mProcSyscallIO), "direction"),
		"syscalls":  s.agg("max", s.over("max_over_time", mSyscalls), "direction"),
		"net":       s.agg("max", s.over("max_over_time", mNetwork), "direction"),
		"procs":     s.maxOfSum(mProcesses, "state"),
		"threads":   s.maxOfSum(mThreads, "state"),
		"fds":       s.agg("max", s.over("max_over_time", mOpenFDs)),
		"energy":    s.agg("max", s.over("max_over_time", mEnergy), "source"),
		"emissions": s.agg("max", s.over("max_over_time", mEmissions)),
	}
	if ownJob {
		// Executable paths are private: only the job's owner sees them.
		q["exe"] = "topk(5, sum by (exe) (" + s.agg("max", s.over("max_over_time", mProcessCPU), "exe") + "))"
	}
	for k, v := range gpuQueries(s, t.GPUIdleUtilization) {
		q[k] = v
	}
	return q
}

// figures fills the report from the query results.
func (r *runner) figures(ctx context.Context, rep *Report, s scope, own bool) error {
	res, err := r.vectors(ctx, s.at, figureQueries(s, own, r.cfg.Thresholds))
	if err != nil {
		return err
	}
	n := func(name string) map[string]float64 { return perNode(res[name], s.node) }
	nl := func(name, label string) map[string]map[string]float64 { return perNodeLabel(res[name], s.node, label) }
	obs := rep.Job.ObservedSeconds

	cpu, cpus := n("cpu"), n("cpus")
	rep.CPU.Cores = deref(total(cpus))
	rep.CPU.UsedSeconds = total(cpu)
	modes := nl("cpu_mode", "mode")
	rep.CPU.UserSeconds, rep.CPU.SystemSeconds = labelTotal(modes, "user"), labelTotal(modes, "system")
	if u := rep.CPU.UsedSeconds; u != nil && obs > 0 {
		rep.CPU.CoresInUse = ptr(*u / obs)
		if rep.CPU.Cores > 0 {
			rep.CPU.Efficiency = ptr(*u / (rep.CPU.Cores * obs))
		}
	}
	rep.CPU.ThrottledSeconds = total(n("throttled"))
	rep.CPU.PerCore = coreBalance(nl("cores", "core"), cpus)
	for _, smp := range res["exe"] {
		rep.CPU.TopExecutables = append(rep.CPU.TopExecutables,
			Executable{Exe: string(smp.Metric["exe"]), Seconds: float64(smp.Value)})
	}
	sort.Slice(rep.CPU.TopExecutables, func(i, j int) bool {
		return rep.CPU.TopExecutables[i].Seconds > rep.CPU.TopExecutables[j].Seconds
	})

	peak, limit := n("mem_peak"), n("mem_limit")
	rep.Memory.PeakBytes, rep.Memory.RequestedBytes = total(peak), total(limit)
	rep.Memory.MeanBytes = total(n("mem_mean"))
	stat := nl("mem_stat", "type")
	rep.Memory.AnonPeakBytes, rep.Memory.FilePeakBytes = labelTotal(stat, "anon"), labelTotal(stat, "file")
	rep.Memory.SwapPeakBytes = total(n("swap"))
	oom := n("oom")
	rep.Memory.OOMKills = total(oom)
	ratios := map[string]float64{}
	for node, p := range peak {
		if l := limit[node]; l > 0 {
			ratios[node] = p / l
		}
	}
	rep.Memory.PeakRatio = maxOf(ratios)

	psi := nl("psi", "resource")
	share := func(res string) *float64 {
		m := map[string]float64{}
		for node, byRes := range psi {
			if v, ok := byRes[res]; ok && obs > 0 {
				m[node] = v / obs
			}
		}
		return maxOf(m)
	}
	rep.CPU.PressureSome, rep.Memory.PressureSome, rep.IO.PressureSome = share("cpu"), share("memory"), share("io")

	r.ioFigures(rep, nl, obs)
	rep.Processes = Processes{MaxProcesses: total(n("procs")), MaxThreads: total(n("threads")), MaxOpenFDs: total(n("fds"))}
	energyFigures(rep, nl("energy", "source"), n("emissions"))
	gpus := gpuFigures(rep, res, s)

	for _, node := range rep.Job.Nodes {
		nd := Node{Name: node, Cores: cpus[node], CPUUsedSeconds: get(cpu, node), MemoryPeakBytes: get(peak, node),
			MemoryRequestedBytes: get(limit, node), MemoryPeakRatio: get(ratios, node), OOMKills: get(oom, node),
			GPUs: gpus[node]}
		if nd.CPUUsedSeconds != nil && nd.Cores > 0 && obs > 0 {
			nd.CPUEfficiency = ptr(*nd.CPUUsedSeconds / (nd.Cores * obs))
		}
		rep.Nodes = append(rep.Nodes, nd)
	}
	return nil
}

// ioFigures prefers the ebpf collector's task IO counters and falls back to
// the process collector's procfs ones, node by node.
func (r *runner) ioFigures(rep *Report, nl func(string, string) map[string]map[string]float64, obs float64) {
	pick := func(primary, fallback string) (map[string]map[string]float64, string) {
		a, b := nl(primary, "direction"), nl(fallback, "direction")
		src := ""
		out := map[string]map[string]float64{}
		for node, v := range b {
			out[node], src = v, "procfs"
		}
		for node, v := range a {
			out[node], src = v, "ebpf"
		}
		return out, src
	}
	storage, src := pick("storage", "pstorage")
	rep.IO.StorageReadBytes, rep.IO.StorageWriteBytes = labelTotal(storage, "read"), labelTotal(storage, "write")
	rep.IO.StorageSource = src
	sysb, _ := pick("sysbytes", "psysbytes")
	rep.IO.SyscallReadBytes, rep.IO.SyscallWriteBytes = labelTotal(sysb, "read"), labelTotal(sysb, "write")
	calls := nl("syscalls", "direction")
	rd, wr := labelTotal(calls, "read"), labelTotal(calls, "write")
	if rd != nil || wr != nil {
		c := deref(rd) + deref(wr)
		rep.IO.Syscalls = &c
		if obs > 0 {
			rep.IO.SyscallsPerSecond = ptr(c / obs)
		}
		if b := deref(rep.IO.SyscallReadBytes) + deref(rep.IO.SyscallWriteBytes); c > 0 {
			rep.IO.BytesPerSyscall = ptr(b / c)
		}
	}
	block := nl("block", "direction")
	rep.IO.BlockReadBytes, rep.IO.BlockWriteBytes = labelTotal(block, "read"), labelTotal(block, "write")
	net := nl("net", "direction")
	rep.Network = Network{ReceiveBytes: labelTotal(net, "receive"), TransmitBytes: labelTotal(net, "transmit")}
}

// energyFigures adds each node's host energy (IPMI where the node has it,
// else RAPL package + DRAM: the exporter offers both, never to be added)
// and the GPUs' measured energy.
func energyFigures(rep *Report, bySource map[string]map[string]float64, emissions map[string]float64) {
	var host, gpu float64
	seen, gpuSeen := false, false
	sources := map[string]bool{}
	for _, src := range bySource {
		if v, ok := src[mIPMIEnergySrc]; ok {
			host, seen = host+v, true
			sources["ipmi"] = true
		} else if c, d := src["rapl_cpu"], src["rapl_dram"]; c+d > 0 || hasAny(src, "rapl_cpu", "rapl_dram") {
			host, seen = host+c+d, true
			sources["rapl"] = true
		}
		if v, ok := src[mGPUEnergySrc]; ok {
			gpu, gpuSeen = gpu+v, true
		}
	}
	if seen || gpuSeen {
		j := host + gpu
		rep.Energy.Joules, rep.Energy.KWh = &j, ptr(j/3.6e6)
	}
	if gpuSeen {
		rep.Energy.GPUJoules = &gpu
	}
	switch {
	case sources["ipmi"] && sources["rapl"]:
		rep.Energy.HostSource = "ipmi+rapl"
	case sources["ipmi"]:
		rep.Energy.HostSource = "ipmi"
	case sources["rapl"]:
		rep.Energy.HostSource = "rapl"
	}
	rep.Energy.EmissionsGrams = total(emissions)
}

func hasAny(m map[string]float64, keys ...string) bool {
	for _, k := range keys {
		if _, ok := m[k]; ok {
			return true
		}
	}
	return false
}

// coreBalance describes the node whose CPU time sits on the fewest of its
// cores. Allocated cores without a series (no time on them) count as 0.
func coreBalance(byNode map[string]map[string]float64, cpus map[string]float64) *CoreBalance {
	var worst *CoreBalance
	var worstShare float64
	for node, cores := range byNode {
		secs := make([]float64, 0, len(cores))
		var sum float64
		for _, v := range cores {
			secs = append(secs, v)
			sum += v
		}
		if sum <= 0 {
			continue
		}
		for len(secs) < int(cpus[node]) {
			secs = append(secs, 0)
		}
		sort.Sort(sort.Reverse(sort.Float64Slice(secs)))
		k, acc := 0, 0.0
		for k < len(secs) && acc < 0.9*sum {
			acc += secs[k]
			k++
		}
		mean := sum / float64(len(secs))
		b := &CoreBalance{Node: node, Cores: len(secs), BusiestSeconds: secs[0], MeanSeconds: mean,
			Balance: mean / secs[0], CoresFor90Percent: k}
		if share := float64(k) / float64(len(secs)); worst == nil || share < worstShare ||
			share == worstShare && node < worst.Node {
			worst, worstShare = b, share
		}
	}
	return worst
}

func deref(p *float64) float64 {
	if p == nil {
		return 0
	}
	return *p
}
