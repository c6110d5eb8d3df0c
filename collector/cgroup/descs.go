// SPDX-License-Identifier: Apache-2.0

package cgroup

import (
	"github.com/jobscope/jobscope/collector"
)

type cgroupDescs struct {
	info                                       *collector.Desc
	memUsage, memPeak, memLimit, memStat       *collector.Desc
	swapUsage, swapLimit, memEvents            *collector.Desc
	cpuUsage, cpuMode, cpus, cpuCore           *collector.Desc
	cpuPeriods, cpuThrottled, cpuThrottledTime *collector.Desc
	pressure, ioBytes, ioOps, pids, pidsLimit  *collector.Desc
}

func newCgroupDescs() cgroupDescs {
	return cgroupDescs{
		info: collector.NewDesc("slurm_job_info",
			"Slurm job running on this node. Metadata from the prolog's job-props directory and a background squeue, which are trusted (props first, squeue filling what it lacks); until squeue answers, a job process's environment fills fields still empty, its user and account only where neither answered and its user is the name of the uid the job's processes run as. Failing those, user is that uid's name. metadata_source names the sources that gave a field (props, environ, squeue, joined by +), or none: filled in later. sluid is Slurm 26.05's unique job id (empty before 26.05); job_key tells apart jobs that reuse an id: the SLUID, else cluster/jobid/start time. Always 1.",
			"jobid", "user", "account", "partition", "qos", "name", "cluster", "array_job_id", "array_task_id", "sluid", "job_key", "cgroup_version", "metadata_source"),
		memUsage: collector.NewJobDesc("slurm_job_memory_usage_bytes",
			"Memory charged to the job cgroup, page cache included (v2 memory.current, v1 memory.usage_in_bytes)."),
		memPeak: collector.NewJobDesc("slurm_job_memory_peak_bytes",
			"Highest memory usage of the job cgroup (v2 memory.peak, v1 memory.max_usage_in_bytes)."),
		memLimit: collector.NewJobDesc("slurm_job_memory_limit_bytes",
			"Memory limit of the job cgroup, normally Slurm's --mem (v2 memory.max, v1 memory.limit_in_bytes); absent when unlimited."),
		memStat: collector.NewJobDesc("slurm_job_memory_stat_bytes",
			"Memory of the job cgroup by type, from memory.stat (v1: the hierarchical total_* keys; rss is anon, cache is file, rss_huge is anon_thp).", "type").Partly(`type="anon", "file"`, "every type").
			BasicOnly("type", "anon", "file"),
		swapUsage: collector.NewJobDesc("slurm_job_memory_swap_usage_bytes",
			"Swap used by the job cgroup (v2 memory.swap.current, v1 memory.stat total_swap)."),
		swapLimit: collector.NewJobDesc("slurm_job_memory_swap_limit_bytes",
			"Swap limit of the job cgroup (v2 memory.swap.max, v1 memory.memsw.limit_in_bytes minus memory.limit_in_bytes); absent when unlimited.").Full(),
		memEvents: collector.NewJobDesc("slurm_job_memory_events_total",
			"Memory events of the job cgroup (v2 memory.events: low, high, max, oom, oom_kill, oom_group_kill; v1: oom_kill from memory.oom_control and max from memory.failcnt, summed over the job's step and task cgroups where the kernel counts them).", "event").Partly(`event="oom_kill"`, "every event").
			BasicOnly("event", "oom_kill"),
		cpuUsage: collector.NewJobDesc("slurm_job_cpu_usage_seconds_total",
			"CPU time used by the job's processes (v2 cpu.stat usage_usec, v1 cpuacct.usage)."),
		cpuMode: collector.NewJobDesc("slurm_job_cpu_seconds_total",
			"CPU time of the job by mode, user or system (v2 cpu.stat user_usec/system_usec, v1 cpuacct.stat in USER_HZ ticks).", "mode"),
		cpus: collector.NewJobDesc("slurm_job_cpus",
			"CPUs the job may run on (cpuset.cpus.effective on v2, cpuset.cpus on v1)."),
		cpuCore: collector.CPUCoreDesc(),
		cpuPeriods: collector.NewJobDesc("slurm_job_cpu_periods_total",
			"CFS bandwidth enforcement periods of the job cgroup (cpu.stat nr_periods); 0 without a CPU quota.").Full(),
		cpuThrottled: collector.NewJobDesc("slurm_job_cpu_throttled_periods_total",
			"Periods in which the job cgroup was throttled by its CPU quota (cpu.stat nr_throttled).").Full(),
		cpuThrottledTime: collector.NewJobDesc("slurm_job_cpu_throttled_seconds_total",
			"Time the job cgroup was throttled by its CPU quota (v2 cpu.stat throttled_usec, v1 cpu.stat throttled_time)."),
		pressure: collector.NewJobDesc("slurm_job_pressure_stalled_seconds_total",
			"Pressure stall time of the job cgroup (PSI: cpu.pressure, memory.pressure, io.pressure total=; level some or full).", "resource", "level").Partly(`level="some"`, "some and full").BasicOnly("level", "some"),
		ioBytes: collector.NewJobDesc("slurm_job_block_io_bytes_total",
			"Block device bytes of the job cgroup (v2 io.stat rbytes/wbytes, v1 blkio.throttle.io_service_bytes_recursive): at --metrics.level=basic summed over the devices as device=\"all\", at full one series per device. Network filesystems are not block IO.", "device", "direction").Partly(`device="all"`, "one series per device"),
		ioOps: collector.NewJobDesc("slurm_job_block_io_operations_total",
			"Block device operations of the job cgroup by device (v2 io.stat rios/wios, v1 blkio.throttle.io_serviced_recursive).", "device", "direction").Full(),
		pids: collector.NewJobDesc("slurm_job_pids",
			"Tasks (processes and threads) in the job cgroup (pids.current).").Full(),
		pidsLimit: collector.NewJobDesc("slurm_job_pids_limit",
			"Task limit of the job cgroup (pids.max); absent when unlimited.").Full(),
	}
}
