// SPDX-License-Identifier: Apache-2.0

package report

// Every metric and recording-rule name the report reads, in one place: a
// renamed metric (the lean default set, the controller renames) is one edit
// here, and names_test.go fails while a name is missing from the exporter's
// golden outputs or the shipped rules.
const (
	mInfo           = "slurm_job_info"
	mCPUUsage       = "slurm_job_cpu_usage_seconds_total"
	mCPUMode        = "slurm_job_cpu_seconds_total"
	mCPUCore        = "slurm_job_cpu_core_seconds_total"
	mCPUs           = "slurm_job_cpus"
	mCPUThrottled   = "slurm_job_cpu_throttled_seconds_total"
	mMemUsage       = "slurm_job_memory_usage_bytes"
	mMemPeak        = "slurm_job_memory_peak_bytes"
	mMemLimit       = "slurm_job_memory_limit_bytes"
	mMemStat        = "slurm_job_memory_stat_bytes"
	mMemSwap        = "slurm_job_memory_swap_usage_bytes"
	mMemEvents      = "slurm_job_memory_events_total"
	mPressure       = "slurm_job_pressure_stalled_seconds_total"
	mBlockIO        = "slurm_job_block_io_bytes_total"
	mStorageIO      = "slurm_job_io_storage_bytes_total"
	mSyscallIO      = "slurm_job_io_syscall_bytes_total"
	mSyscalls       = "slurm_job_io_syscalls_total"
	mProcStorageIO  = "slurm_job_process_storage_io_bytes_total"
	mProcSyscallIO  = "slurm_job_process_syscall_io_bytes_total"
	mNetwork        = "slurm_job_network_bytes_total"
	mProcesses      = "slurm_job_processes"
	mThreads        = "slurm_job_threads"
	mOpenFDs        = "slurm_job_open_fds"
	mProcessCPU     = "slurm_job_process_cpu_seconds_total"
	mGPUInfo        = "slurm_job_gpu_info"
	mGPUUtil        = "slurm_job_gpu_utilization_ratio"
	mGPUMemUsed     = "slurm_job_gpu_memory_used_bytes"
	mGPUMemTotal    = "slurm_job_gpu_memory_total_bytes"
	mGPUSMActive    = "slurm_job_gpu_sm_active_ratio"
	mGPUTensor      = "slurm_job_gpu_tensor_active_ratio"
	mEnergy         = "slurm_job_energy_joules_total"
	mEmissions      = "slurm_job_emissions_grams_total"
	mGPUEnergySrc   = "gpu"  // slurm_job_energy_joules_total{source}
	mIPMIEnergySrc  = "ipmi" // an alternative to rapl_cpu + rapl_dram, never an addition
	mRAPLEnergySrcs = "rapl_cpu|rapl_dram"
	evOOMKill       = "oom_kill" // slurm_job_memory_events_total{event}
)

// Label names.
const (
	lJobID  = "jobid"
	lJobKey = "job_key"
	lUser   = "user"
	lAcct   = "account"
	lPart   = "partition"
	lClust  = "cluster"
)

// Per-job summary series recorded by contrib/prometheus/jobscope-usage-rules.yml
// (group usageGroup); the usage report reads only these.
const (
	usageGroup     = "jobscope-usage"
	rCPUs          = "job:slurm_job_cpus:sum"
	rCPUUsed       = "job:slurm_job_cpu_usage_seconds:sum"
	rScrapeTime    = "job:slurm_job_scrape_timestamp_seconds:max"
	rGPUs          = "job:slurm_job_gpus:count"
	rGPUUtil       = "job:slurm_job_gpu_utilization:mean"
	rMemPeakRatio  = "job:slurm_job_memory_peak:max_ratio"
	rMemLimit      = "job:slurm_job_memory_limit_bytes:max"
	rOOMKills      = "job:slurm_job_oom_kills:sum"
	rEnergy        = "job:slurm_job_energy_joules:sum"
	rEmissions     = "job:slurm_job_emissions_grams:sum"
	usageRulesFile = "jobscope-usage-rules.yml"
)
