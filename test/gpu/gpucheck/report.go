// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"
	"math"
	"strings"
	"time"
)

type row struct{ metric, load, idle, truth, status string }

type report struct {
	rows  []row
	fails int
}

func (r *report) add(metric, load, idle, truth string, ok bool) {
	st := "PASS"
	if !ok {
		st = "FAIL"
		r.fails++
	}
	r.rows = append(r.rows, row{metric, load, idle, truth, st})
}

func (r *report) check(metric, truth, measured string, ok bool) {
	r.add(metric, measured, "", truth, ok)
}

func (r *report) table() string {
	var b strings.Builder
	b.WriteString("| metric | under load | idle | ground truth | result |\n|---|---|---|---|---|\n")
	for _, x := range r.rows {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", x.metric, x.load, x.idle, x.truth, x.status)
	}
	fmt.Fprintf(&b, "\n%d checks, %d failed\n", len(r.rows), r.fails)
	return b.String()
}

type evalInput struct {
	uuid                                              string
	smi                                               *smiSampler
	ctx, allocIdle, busy, tensor, idle, proc, uuidEnv *phase
	free1                                             *phase
	allocLine, askLine                                string
	memScrape                                         *scrape
	allocMiB, gpus                                    int
	gpuDur, httpDur                                   []float64
}

func within(got, want, rel float64) bool {
	return want != 0 && math.Abs(got-want)/math.Abs(want) <= rel
}

func f3(x float64) string { return fmt.Sprintf("%.3f", x) }

func smiMedian(s *smiSampler, p *phase, skip time.Duration, pick func(smiSample) float64) float64 {
	var xs []float64
	for _, x := range s.between(p.from.Add(skip), p.to) {
		xs = append(xs, pick(x))
	}
	return median(xs)
}

func evaluate(r *report, in evalInput) {
	j1 := map[string]string{"jobid": "4242"}
	util := "slurm_job_gpu_utilization_ratio"
	smiUtil := func(x smiSample) float64 { return x.Util / 100 }

	busyU := median(in.busy.vals("a", util, j1, 2))
	tensU := median(in.tensor.vals("a", util, j1, 2))
	idleU := append(in.allocIdle.vals("a", util, j1, 3), in.idle.vals("a", util, j1, 3)...)
	maxIdle := -1.0
	for _, v := range idleU {
		maxIdle = math.Max(maxIdle, v)
	}
	r.add(util+" (FP32 load)", f3(busyU), fmt.Sprintf("max %s over %d scrapes", f3(maxIdle), len(idleU)),
		fmt.Sprintf("nvidia-smi %s; want > 0.5 loaded, 0 idle", f3(smiMedian(in.smi, in.busy, 2*time.Second, smiUtil))),
		busyU > 0.5 && maxIdle >= 0 && maxIdle <= 0.02)
	r.add(util+" (tensor load)", f3(tensU), "", fmt.Sprintf("nvidia-smi %s; want > 0.5", f3(smiMedian(in.smi, in.tensor, 2*time.Second, smiUtil))), tensU > 0.5)

	// Allocated but idle, seen through the environment mapping (instance b).
	idleB := in.idle.vals("b", util, j1, 3)
	r.add("allocated-but-idle GPU: "+util+" (env mapping)", "", fmt.Sprintf("%v", idleB), "0 while the job holds the GPU and runs nothing",
		len(idleB) > 0 && median(idleB) == 0 && in.idle.last("b").label("slurm_job_gpu_info", j1, "uuid") == in.uuid)

	// Memory: the device's used bytes against the driver's own count.
	memName := "slurm_job_gpu_memory_used_bytes"
	memGot, ok := in.memScrape.value(memName, j1)
	drv := memUsed(in.askLine)
	r.add(memName, fmt.Sprintf("%.0f", memGot), "", fmt.Sprintf("cudaMemGetInfo total-free %.0f (within 1%%)", drv), ok && within(memGot, drv, 0.01))
	ctxMem := median(in.ctx.vals("a", memName, j1, 0))
	allocMem := median(in.allocIdle.vals("a", memName, j1, 0))
	want := float64(in.allocMiB) * (1 << 20)
	r.add(memName+" increase after cudaMalloc", fmt.Sprintf("%.0f", allocMem-ctxMem), "", fmt.Sprintf("%.0f allocated (within 1%%)", want), within(allocMem-ctxMem, want, 0.01))
	total, _ := in.memScrape.value("slurm_job_gpu_memory_total_bytes", j1)
	r.add("slurm_job_gpu_memory_total_bytes", fmt.Sprintf("%.0f", total), "", "cudaMemGetInfo total "+field(in.askLine, "total="), within(total, num(field(in.askLine, "total=")), 0.01))

	// Energy: the counter's increase against nvidia-smi's power integrated.
	en := "slurm_job_gpu_energy_joules_total"
	s1, s2 := first(in.busy.scrapes["a"]), in.tensor.last("a")
	e1, ok1 := s1.value(en, j1)
	e2, ok2 := s2.value(en, j1)
	var integ float64
	var n int
	if s1 != nil && s2 != nil {
		integ, n = in.smi.energy(s1.At, s2.At)
	}
	r.add(en+" increase (load phases)", fmt.Sprintf("%.1f J", e2-e1), "",
		fmt.Sprintf("∫ nvidia-smi power = %.1f J (%d samples; within 10%%)", integ, n), ok1 && ok2 && within(e2-e1, integ, 0.10))

	pw := "slurm_job_gpu_power_watts"
	pBusy := median(in.busy.vals("a", pw, j1, 2))
	pIdle := median(in.idle.vals("a", pw, j1, 3))
	smiP := smiMedian(in.smi, in.busy, 2*time.Second, func(x smiSample) float64 { return x.PowerW })
	smiPI := smiMedian(in.smi, in.idle, 3*time.Second, func(x smiSample) float64 { return x.PowerW })
	r.add(pw, f3(pBusy), f3(pIdle), fmt.Sprintf("nvidia-smi %s loaded, %s idle (within 15%%)", f3(smiP), f3(smiPI)), within(pBusy, smiP, 0.15) && within(pIdle, smiPI, 0.15))

	// Profiling through GPM (no DCGM here): present, and following the load.
	for _, pf := range []struct {
		name        string
		loaded      *phase
		min, maxIdl float64
	}{
		{"slurm_job_gpu_sm_active_ratio", in.busy, 0.5, 0.05},
		{"slurm_job_gpu_sm_occupancy_ratio", in.busy, 0.05, 0.05},
		{"slurm_job_gpu_fp32_active_ratio", in.busy, 0.05, 0.05},
		{"slurm_job_gpu_tensor_active_ratio", in.tensor, 0.05, 0.05},
	} {
		l := median(pf.loaded.vals("a", pf.name, j1, 2))
		i := median(in.idle.vals("a", pf.name, j1, 3))
		r.add(pf.name+" ("+pf.loaded.name+")", f3(l), f3(i), fmt.Sprintf("present; > %g loaded, < %g idle", pf.min, pf.maxIdl), l > pf.min && i >= 0 && i < pf.maxIdl)
	}
	tb := median(in.busy.vals("a", "slurm_job_gpu_tensor_active_ratio", j1, 2))
	r.add("slurm_job_gpu_tensor_active_ratio (FP32 load)", f3(tb), "", "about 0: the FMA kernel uses no tensor core", tb >= 0 && tb < 0.05)

	clk := median(in.busy.vals("a", "slurm_job_gpu_sm_clock_hertz", j1, 2)) / 1e6
	smiClk := smiMedian(in.smi, in.busy, 2*time.Second, func(x smiSample) float64 { return x.SMClock })
	r.add("slurm_job_gpu_sm_clock_hertz (MHz)", f3(clk), "", "nvidia-smi "+f3(smiClk)+" (within 5%)", within(clk, smiClk, 0.05))
	temp := median(in.busy.vals("a", "slurm_job_gpu_temperature_celsius", j1, 2))
	smiT := smiMedian(in.smi, in.busy, 2*time.Second, func(x smiSample) float64 { return x.TempC })
	r.add("slurm_job_gpu_temperature_celsius", f3(temp), "", "nvidia-smi "+f3(smiT)+" (±3 °C)", math.Abs(temp-smiT) <= 3)

	// GPU-to-job mapping: which method found each job.
	info := "slurm_job_gpu_info"
	for _, m := range []struct {
		desc, inst, job, want string
		p                     *phase
	}{
		{"prolog mapping file", "a", "4242", "mapping_dir", in.busy},
		{"CUDA_VISIBLE_DEVICES=0 in the environment", "b", "4242", "environ", in.busy},
		{"no GPU variable: NVML process list", "b", "4243", "process", in.proc},
		{"CUDA_VISIBLE_DEVICES=<GPU UUID> (gres env_uuid)", "b", "4244", "environ", in.uuidEnv},
	} {
		got := m.p.last(m.inst).label(info, map[string]string{"jobid": m.job}, "method")
		r.check("mapping: "+m.desc, "job "+m.job+" method="+m.want, "method="+got, got == m.want)
	}
	nojob := in.free1.last("a")
	held, free := len(nojob.series(info)), len(nojob.series("jobscope_gpu_info"))
	r.check("GPU freed: jobscope_gpu_* again, no job series", fmt.Sprintf("0 slurm_job_gpu_info, %d jobscope_gpu_info", in.gpus),
		fmt.Sprint(held, " slurm_job_gpu_info, ", free, " jobscope_gpu_info"), held == 0 && free == in.gpus)

	var fails []string
	for _, p := range []*phase{in.ctx, in.allocIdle, in.busy, in.tensor, in.idle, in.proc} {
		for _, s := range p.scrapes["a"] {
			if v, ok := s.value("jobscope_scrape_collector_success", map[string]string{"collector": "gpu"}); !ok || v != 1 {
				fails = append(fails, p.name)
			}
		}
	}
	r.check("gpu collector success on every scrape of instance a", "1", fmt.Sprintf("%d failures", len(fails)), len(fails) == 0)
	errs := in.busy.last("a").series("jobscope_collector_errors_total")
	r.check("jobscope_collector_errors_total (instance a, after load)", "no gpu cause", strings.Join(errs, "; "), !strings.Contains(strings.Join(errs, ";"), `collector=gpu`))
	r.check("scrape cost: gpu collector alone, 1 GPU (median of 60)", "reported", fmt.Sprintf("collector %.2f ms, HTTP %.2f ms", median(in.gpuDur)*1e3, median(in.httpDur)*1e3), len(in.gpuDur) > 30)
}

func first(ss []*scrape) *scrape {
	if len(ss) == 0 {
		return nil
	}
	return ss[0]
}

func field(line, key string) string {
	for _, f := range strings.Fields(line) {
		if v, ok := strings.CutPrefix(f, key); ok {
			return v
		}
	}
	return ""
}

func num(s string) float64 {
	var v float64
	_, _ = fmt.Sscan(s, &v) // not a number: 0
	return v
}
