package collector

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/jobscope/jobscope/collector/discovery"
)

type cgroupDescs struct {
	info                                       *prometheus.Desc
	memUsage, memPeak, memLimit, memStat       *prometheus.Desc
	swapUsage, swapLimit, memEvents            *prometheus.Desc
	cpuUsage, cpuMode, cpus, cpuCore           *prometheus.Desc
	cpuPeriods, cpuThrottled, cpuThrottledTime *prometheus.Desc
	pressure, ioBytes, ioOps, pids, pidsLimit  *prometheus.Desc

	// extra holds each descriptor's label names after the job labels.
	extra map[*prometheus.Desc][]string
}

func jobDesc(name, help string, extra ...string) *prometheus.Desc {
	return prometheus.NewDesc(name, help, append(append([]string{}, discovery.JobLabelNames...), extra...), nil)
}

func newCgroupDescs() cgroupDescs {
	d := cgroupDescList()
	d.extra = map[*prometheus.Desc][]string{}
	for _, desc := range DescsOf(d) {
		d.extra[desc] = extraLabelNames(desc)
	}
	return d
}

func cgroupDescList() cgroupDescs {
	return cgroupDescs{
		info: prometheus.NewDesc("slurm_job_info",
			"Slurm job running on this node. Metadata from the prolog's job-props directory, a job process's environment and a background squeue, merged field by field (metadata_source names those that gave a field, or none: filled in later). sluid is Slurm 26.05's unique job id (empty before 26.05); job_key tells apart jobs that reuse an id: the SLUID, else cluster/jobid/start time. Always 1.",
			[]string{"jobid", "user", "account", "partition", "qos", "name", "cluster", "array_job_id", "array_task_id", "sluid", "job_key", "cgroup_version", "metadata_source"}, nil),
		memUsage: jobDesc("slurm_job_memory_usage_bytes",
			"Memory charged to the job cgroup, page cache included (v2 memory.current, v1 memory.usage_in_bytes)."),
		memPeak: jobDesc("slurm_job_memory_peak_bytes",
			"Highest memory usage of the job cgroup (v2 memory.peak, v1 memory.max_usage_in_bytes)."),
		memLimit: jobDesc("slurm_job_memory_limit_bytes",
			"Memory limit of the job cgroup, normally Slurm's --mem (v2 memory.max, v1 memory.limit_in_bytes); absent when unlimited."),
		memStat: jobDesc("slurm_job_memory_stat_bytes",
			"Memory of the job cgroup by type, from memory.stat (v1: the hierarchical total_* keys; rss is anon, cache is file, rss_huge is anon_thp).", "type"),
		swapUsage: jobDesc("slurm_job_memory_swap_usage_bytes",
			"Swap used by the job cgroup (v2 memory.swap.current, v1 memory.stat total_swap)."),
		swapLimit: jobDesc("slurm_job_memory_swap_limit_bytes",
			"Swap limit of the job cgroup (v2 memory.swap.max, v1 memory.memsw.limit_in_bytes minus memory.limit_in_bytes); absent when unlimited."),
		memEvents: jobDesc("slurm_job_memory_events_total",
			"Memory events of the job cgroup (v2 memory.events: low, high, max, oom, oom_kill, oom_group_kill; v1: oom_kill from memory.oom_control and max from memory.failcnt, summed over the job's step and task cgroups where the kernel counts them).", "event"),
		cpuUsage: jobDesc("slurm_job_cpu_usage_seconds_total",
			"CPU time used by the job's processes (v2 cpu.stat usage_usec, v1 cpuacct.usage)."),
		cpuMode: jobDesc("slurm_job_cpu_seconds_total",
			"CPU time of the job by mode, user or system (v2 cpu.stat user_usec/system_usec, v1 cpuacct.stat in USER_HZ ticks).", "mode"),
		cpus: jobDesc("slurm_job_cpus",
			"CPUs the job may run on (cpuset.cpus.effective on v2, cpuset.cpus on v1)."),
		cpuCore: jobDesc("slurm_job_cpu_core_seconds_total",
			"CPU time of the job per core: the ebpf collector's sched_switch accounting while it is loaded (v1 and v2), else v1 cpuacct.usage_percpu for the allocated cores. One source per node.", "core"),
		cpuPeriods: jobDesc("slurm_job_cpu_periods_total",
			"CFS bandwidth enforcement periods of the job cgroup (cpu.stat nr_periods); 0 without a CPU quota."),
		cpuThrottled: jobDesc("slurm_job_cpu_throttled_periods_total",
			"Periods in which the job cgroup was throttled by its CPU quota (cpu.stat nr_throttled)."),
		cpuThrottledTime: jobDesc("slurm_job_cpu_throttled_seconds_total",
			"Time the job cgroup was throttled by its CPU quota (v2 cpu.stat throttled_usec, v1 cpu.stat throttled_time)."),
		pressure: jobDesc("slurm_job_pressure_stalled_seconds_total",
			"Pressure stall time of the job cgroup (PSI: cpu.pressure, memory.pressure, io.pressure total=; level some or full).", "resource", "level"),
		ioBytes: jobDesc("slurm_job_block_io_bytes_total",
			"Block device bytes of the job cgroup by device (v2 io.stat rbytes/wbytes, v1 blkio.throttle.io_service_bytes_recursive). Network filesystems are not block IO.", "device", "direction"),
		ioOps: jobDesc("slurm_job_block_io_operations_total",
			"Block device operations of the job cgroup by device (v2 io.stat rios/wios, v1 blkio.throttle.io_serviced_recursive).", "device", "direction"),
		pids: jobDesc("slurm_job_pids",
			"Tasks (processes and threads) in the job cgroup (pids.current)."),
		pidsLimit: jobDesc("slurm_job_pids_limit",
			"Task limit of the job cgroup (pids.max); absent when unlimited."),
	}
}
