// SPDX-License-Identifier: Apache-2.0

package report

import (
	"sort"
	"strconv"

	"github.com/prometheus/common/model"
)

// gpuLabels identify a GPU or MIG instance of a job on a node.
var gpuLabels = []string{"gpu", "uuid", "mig_uuid"}

func gpuQueries(s scope, idle float64) map[string]string {
	return map[string]string{
		"gpu_info":   s.agg("group", s.over("last_over_time", mGPUInfo), append(gpuLabels, "model")...),
		"gpu_idle":   gpuIdleQuery(s, idle),
		"gpu_util":   s.subquery("avg_over_time", s.agg("max", s.sel(mGPUUtil), gpuLabels...)),
		"gpu_mem":    s.agg("max", s.over("max_over_time", mGPUMemUsed), gpuLabels...),
		"gpu_total":  s.agg("max", s.over("max_over_time", mGPUMemTotal), gpuLabels...),
		"gpu_sm":     s.subquery("avg_over_time", s.agg("max", s.sel(mGPUSMActive), gpuLabels...)),
		"gpu_tensor": s.subquery("avg_over_time", s.agg("max", s.sel(mGPUTensor), gpuLabels...)),
	}
}

// gpuIdleQuery is the fraction of samples in which each GPU's utilisation
// was at or under the idle level.
func gpuIdleQuery(s scope, idle float64) string {
	return s.subquery("avg_over_time",
		s.agg("max", s.sel(mGPUUtil), gpuLabels...)+" <= bool "+strconv.FormatFloat(idle, 'g', -1, 64))
}

type gpuKey struct{ node, gpu, uuid, mig string }

func gpuKeyOf(m model.Metric, node string) gpuKey {
	return gpuKey{string(m[model.LabelName(node)]), string(m["gpu"]), string(m["uuid"]), string(m["mig_uuid"])}
}

// gpuFigures fills the GPU section and returns the GPU count per node.
func gpuFigures(rep *Report, res map[string]model.Vector, s scope) map[string]int {
	devs := map[gpuKey]*GPUDevice{}
	for _, smp := range res["gpu_info"] {
		k := gpuKeyOf(smp.Metric, s.node)
		devs[k] = &GPUDevice{Node: k.node, Index: k.gpu, UUID: k.uuid, MIGUUID: k.mig, Model: string(smp.Metric["model"])}
	}
	set := func(name string, dst func(*GPUDevice) **float64) {
		for _, smp := range res[name] {
			k := gpuKeyOf(smp.Metric, s.node)
			d := devs[k]
			if d == nil { // utilisation without an info series: still the job's GPU
				d = &GPUDevice{Node: k.node, Index: k.gpu, UUID: k.uuid, MIGUUID: k.mig}
				devs[k] = d
			}
			*dst(d) = ptr(float64(smp.Value))
		}
	}
	set("gpu_util", func(d *GPUDevice) **float64 { return &d.UtilizationMean })
	set("gpu_idle", func(d *GPUDevice) **float64 { return &d.IdleFraction })
	set("gpu_mem", func(d *GPUDevice) **float64 { return &d.MemoryPeakBytes })
	set("gpu_total", func(d *GPUDevice) **float64 { return &d.MemoryTotalBytes })
	set("gpu_sm", func(d *GPUDevice) **float64 { return &d.SMActiveMean })
	set("gpu_tensor", func(d *GPUDevice) **float64 { return &d.TensorActiveMean })

	perNode := map[string]int{}
	var sum float64
	n := 0
	for _, d := range devs {
		rep.GPU.Devices = append(rep.GPU.Devices, *d)
		perNode[d.Node]++
		if d.UtilizationMean != nil {
			sum += *d.UtilizationMean
			n++
		}
	}
	sort.Slice(rep.GPU.Devices, func(i, j int) bool {
		a, b := rep.GPU.Devices[i], rep.GPU.Devices[j]
		if a.Node != b.Node {
			return a.Node < b.Node
		}
		if a.Index != b.Index {
			return lessNumeric(a.Index, b.Index)
		}
		return a.MIGUUID < b.MIGUUID
	})
	rep.GPU.Count = len(devs)
	if n > 0 {
		rep.GPU.UtilizationMean = ptr(sum / float64(n))
	}
	return perNode
}

// lessNumeric orders "2" before "10".
func lessNumeric(a, b string) bool {
	x, errA := strconv.Atoi(a)
	y, errB := strconv.Atoi(b)
	if errA == nil && errB == nil {
		return x < y
	}
	return a < b
}
