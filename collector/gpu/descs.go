// SPDX-License-Identifier: Apache-2.0

package gpu

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/jobscope/jobscope/collector"
	"github.com/jobscope/jobscope/gpu"
)

// gpuDeviceLabels follow the job labels on every GPU series. On a MIG
// instance gpu and uuid name the parent GPU and mig_uuid the instance; on
// a whole GPU mig_uuid is empty.
var gpuDeviceLabels = []string{"gpu", "uuid", "model", "mig_uuid"}

// gpuFieldSpec turns one backend field into a metric, per job
// (slurm_job_gpu_<name>) and for GPUs no job holds (jobscope_gpu_<name>).
type gpuFieldSpec struct {
	field gpu.Field
	name  string
	// label and value tell apart series of one metric (direction=tx/rx,
	// type=corrected/uncorrected); label is "" when the metric has none.
	label, value string
	typ          prometheus.ValueType
	help         string
}

const (
	srcTelemetry = " (NVML or DCGM, per --gpu.backend; read at scrape time)"
	srcProfiling = " (DCGM profiling, or NVML GPM on Hopper and later averaged since the previous scrape; absent on older GPUs without DCGM)"
)

var gpuFieldSpecs = []gpuFieldSpec{
	{gpu.MemoryTotalBytes, "memory_total_bytes", "", "", prometheus.GaugeValue, "GPU (or MIG instance) memory size in bytes" + srcTelemetry},
	{gpu.MemoryUsedBytes, "memory_used_bytes", "", "", prometheus.GaugeValue, "GPU (or MIG instance) memory in use in bytes" + srcTelemetry},
	{gpu.UtilizationRatio, "utilization_ratio", "", "", prometheus.GaugeValue, "Fraction of the driver's last sample period in which a kernel ran" + srcTelemetry},
	{gpu.MemoryUtilRatio, "memory_utilization_ratio", "", "", prometheus.GaugeValue, "Fraction of the driver's last sample period in which device memory was read or written" + srcTelemetry},
	{gpu.PowerWatts, "power_watts", "", "", prometheus.GaugeValue, "GPU board power draw in watts" + srcTelemetry},
	{gpu.EnergyJoules, "energy_joules_total", "", "", prometheus.CounterValue, "GPU energy in joules: the device's counter since the driver was loaded, so use increase()" + srcTelemetry},
	{gpu.TemperatureCelsius, "temperature_celsius", "", "", prometheus.GaugeValue, "GPU core temperature in degrees Celsius" + srcTelemetry},
	{gpu.SMClockHertz, "sm_clock_hertz", "", "", prometheus.GaugeValue, "GPU SM clock in hertz" + srcTelemetry},
	{gpu.SMActiveRatio, "sm_active_ratio", "", "", prometheus.GaugeValue, "Fraction of time at least one warp was resident on an SM, averaged over SMs" + srcProfiling},
	{gpu.SMOccupancyRatio, "sm_occupancy_ratio", "", "", prometheus.GaugeValue, "Resident warps relative to the SMs' maximum" + srcProfiling},
	{gpu.TensorActiveRatio, "tensor_active_ratio", "", "", prometheus.GaugeValue, "Fraction of cycles the tensor cores were busy" + srcProfiling},
	{gpu.DRAMActiveRatio, "dram_active_ratio", "", "", prometheus.GaugeValue, "Fraction of cycles device memory was transferring data" + srcProfiling},
	{gpu.FP64ActiveRatio, "fp64_active_ratio", "", "", prometheus.GaugeValue, "Fraction of cycles the FP64 pipes were busy" + srcProfiling},
	{gpu.FP32ActiveRatio, "fp32_active_ratio", "", "", prometheus.GaugeValue, "Fraction of cycles the FP32 pipes were busy" + srcProfiling},
	{gpu.FP16ActiveRatio, "fp16_active_ratio", "", "", prometheus.GaugeValue, "Fraction of cycles the FP16 pipes were busy" + srcProfiling},
	{gpu.PCIeTXBytesPerSecond, "pcie_throughput_bytes_per_second", "direction", "tx", prometheus.GaugeValue, "PCIe traffic in bytes per second by direction (DCGM profiling or NVML GPM averaged since the previous scrape; else NVML's 20 ms sample)"},
	{gpu.PCIeRXBytesPerSecond, "pcie_throughput_bytes_per_second", "direction", "rx", prometheus.GaugeValue, ""},
	{gpu.NVLinkTXBytesPerSecond, "nvlink_throughput_bytes_per_second", "direction", "tx", prometheus.GaugeValue, "NVLink traffic over all links in bytes per second by direction" + srcProfiling},
	{gpu.NVLinkRXBytesPerSecond, "nvlink_throughput_bytes_per_second", "direction", "rx", prometheus.GaugeValue, ""},
	{gpu.ECCCorrected, "ecc_errors_total", "type", "corrected", prometheus.CounterValue, "GPU memory ECC errors since the driver was loaded (volatile counters), by type corrected or uncorrected" + srcTelemetry},
	{gpu.ECCUncorrected, "ecc_errors_total", "type", "uncorrected", prometheus.CounterValue, ""},
}

// gpuDescs holds the GPU collector's descriptors, built once.
type gpuDescs struct {
	job, node         map[string]*collector.Desc // by spec name
	jobInfo, nodeInfo *collector.Desc
	jobXid, nodeXid   *collector.Desc
	lost, age         *collector.Desc
	order             []string
}

func newGPUDescs() gpuDescs {
	d := gpuDescs{job: map[string]*collector.Desc{}, node: map[string]*collector.Desc{}}
	dev := func(extra ...string) []string { return append(append([]string{}, gpuDeviceLabels...), extra...) }
	for _, s := range gpuFieldSpecs {
		if _, done := d.job[s.name]; done {
			continue
		}
		var extra []string
		if s.label != "" {
			extra = []string{s.label}
		}
		d.job[s.name] = collector.NewJobDesc("slurm_job_gpu_"+s.name, s.help+".", dev(extra...)...)
		d.node[s.name] = collector.NewDesc("jobscope_gpu_"+s.name, s.help+"; only GPUs that belong to no job.", dev(extra...)...)
		d.order = append(d.order, s.name)
	}
	d.jobInfo = collector.NewJobDesc("slurm_job_gpu_info",
		"A GPU or MIG instance the job holds, whether or not it runs anything on it; method says which mapping found it first (mapping_dir, devices_cgroup, environ, process). Always 1.",
		dev("method")...)
	d.nodeInfo = collector.NewDesc("jobscope_gpu_info",
		"Every GPU and MIG instance the GPU backend sees on this node; backend is nvml, dcgm or fake. Always 1.",
		dev("backend")...)
	d.jobXid = collector.NewJobDesc("slurm_job_gpu_xid_errors_total",
		"Xid errors the driver reported on the job's GPU, counted by jobscope from NVML events since the job was first seen with an Xid (attributed at the scrape after the event).",
		dev("xid")...)
	d.nodeXid = collector.NewDesc("jobscope_gpu_xid_errors_total",
		"Xid errors the driver reported on GPUs that belonged to no job at the scrape after the event, counted by jobscope from NVML events since it started.",
		dev("xid")...)
	d.lost = collector.NewDesc("jobscope_gpu_lost",
		"1 for a GPU the driver reports as lost (NVML GPU_IS_LOST, Xid 79: fallen off the bus), under the identity it had when last read (uuid empty if it never was); 0 for every GPU that answers.",
		gpuDeviceLabels...)
	d.age = collector.NewDesc("jobscope_gpu_snapshot_age_seconds",
		"Age of the GPU values this scrape serves: 0 when read now; while the backend (DCGM) is unreachable and no fallback answers, the last good snapshot is served again and this says how old it is.")
	return d
}

// all lists every descriptor (for docs/metrics.md).
func (d gpuDescs) all() []*collector.Desc {
	out := []*collector.Desc{d.jobInfo, d.nodeInfo, d.jobXid, d.nodeXid, d.lost, d.age}
	for _, n := range d.order {
		out = append(out, d.job[n], d.node[n])
	}
	return out
}
