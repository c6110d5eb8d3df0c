// SPDX-License-Identifier: Apache-2.0

package report

import "time"

// The JSON field names below are a contract (docs/report.md lists each):
// add fields, never rename or remove them without a new schema string.
// A figure Prometheus has no samples for is null, never 0.

// JobSchema names the job report's JSON layout.
const JobSchema = "jobscope.report.job/v1"

// Report is one job's report.
type Report struct {
	Schema      string    `json:"schema"`
	GeneratedAt time.Time `json:"generated_at"`
	Job         Job       `json:"job"`
	CPU         CPU       `json:"cpu"`
	Memory      Memory    `json:"memory"`
	GPU         GPU       `json:"gpu"`
	IO          IO        `json:"io"`
	Network     Network   `json:"network"`
	Processes   Processes `json:"processes"`
	Energy      Energy    `json:"energy"`
	Nodes       []Node    `json:"nodes"`
	Charts      []Chart   `json:"charts"`
	Warnings    []Warning `json:"warnings"`
	Notes       []string  `json:"notes"`
}

// Job is who ran what, where and when.
type Job struct {
	ID          string   `json:"id"`
	Key         string   `json:"key"`
	Cluster     string   `json:"cluster"`
	User        string   `json:"user"`
	Account     string   `json:"account"`
	Partition   string   `json:"partition"`
	QOS         string   `json:"qos"`
	Name        string   `json:"name"`
	ArrayJobID  string   `json:"array_job_id"`
	ArrayTaskID string   `json:"array_task_id"`
	State       string   `json:"state"`
	Running     bool     `json:"running"`
	ExitCode    string   `json:"exit_code"`
	Nodes       []string `json:"nodes"`

	SubmitTime       *time.Time `json:"submit_time"`
	StartTime        time.Time  `json:"start_time"`
	EndTime          *time.Time `json:"end_time"`
	FirstSample      time.Time  `json:"first_sample"`
	LastSample       time.Time  `json:"last_sample"`
	ElapsedSeconds   float64    `json:"elapsed_seconds"`
	ObservedSeconds  float64    `json:"observed_seconds"`
	WaitSeconds      *float64   `json:"wait_seconds"`
	TimeLimitSeconds *float64   `json:"time_limit_seconds"`
	StartSource      string     `json:"start_source"`
	EndSource        string     `json:"end_source"`
	ScrapeInterval   float64    `json:"scrape_interval_seconds"`
	OtherJobsWithID  []JobRef   `json:"other_jobs_with_id"`
}

// JobRef is another job that used the same id in the lookback window.
type JobRef struct {
	Key         string    `json:"key"`
	Cluster     string    `json:"cluster"`
	User        string    `json:"user"`
	Nodes       []string  `json:"nodes"`
	FirstSample time.Time `json:"first_sample"`
	LastSample  time.Time `json:"last_sample"`
}

// CPU figures; efficiency is used / (cores x observed seconds).
type CPU struct {
	Cores            float64      `json:"cores"`
	UsedSeconds      *float64     `json:"used_seconds"`
	UserSeconds      *float64     `json:"user_seconds"`
	SystemSeconds    *float64     `json:"system_seconds"`
	Efficiency       *float64     `json:"efficiency"`
	CoresInUse       *float64     `json:"cores_in_use"`
	ThrottledSeconds *float64     `json:"throttled_seconds"`
	PressureSome     *float64     `json:"pressure_some_ratio"`
	PerCore          *CoreBalance `json:"per_core"`
	TopExecutables   []Executable `json:"top_executables"`
}

// CoreBalance describes how CPU time spread over the cores of the node
// where it was least even.
type CoreBalance struct {
	Node              string  `json:"node"`
	Cores             int     `json:"cores"`
	BusiestSeconds    float64 `json:"busiest_seconds"`
	MeanSeconds       float64 `json:"mean_seconds"`
	Balance           float64 `json:"balance"`
	CoresFor90Percent int     `json:"cores_for_90_percent"`
}

// Executable is CPU time by program, shown for the caller's own jobs only.
type Executable struct {
	Exe     string  `json:"exe"`
	Seconds float64 `json:"seconds"`
}

// Memory figures; the ratio is the highest of the nodes' peak / request.
type Memory struct {
	RequestedBytes *float64 `json:"requested_bytes"`
	PeakBytes      *float64 `json:"peak_bytes"`
	PeakRatio      *float64 `json:"peak_ratio"`
	MeanBytes      *float64 `json:"mean_bytes"`
	AnonPeakBytes  *float64 `json:"anon_peak_bytes"`
	FilePeakBytes  *float64 `json:"file_peak_bytes"`
	SwapPeakBytes  *float64 `json:"swap_peak_bytes"`
	OOMKills       *float64 `json:"oom_kills"`
	PressureSome   *float64 `json:"pressure_some_ratio"`
}

// GPU figures over the job's GPUs.
type GPU struct {
	Count           int         `json:"count"`
	UtilizationMean *float64    `json:"utilization_mean"`
	IdleCount       int         `json:"idle_count"`
	Devices         []GPUDevice `json:"devices"`
}

// GPUDevice is one GPU or MIG instance the job held.
type GPUDevice struct {
	Node             string   `json:"node"`
	Index            string   `json:"index"`
	UUID             string   `json:"uuid"`
	MIGUUID          string   `json:"mig_uuid"`
	Model            string   `json:"model"`
	UtilizationMean  *float64 `json:"utilization_mean"`
	IdleFraction     *float64 `json:"idle_fraction"`
	MemoryPeakBytes  *float64 `json:"memory_peak_bytes"`
	MemoryTotalBytes *float64 `json:"memory_total_bytes"`
	SMActiveMean     *float64 `json:"sm_active_mean"`
	TensorActiveMean *float64 `json:"tensor_active_mean"`
}

// IO figures: storage (page-cache level, network filesystems included),
// syscalls (files, pipes, sockets) and block devices.
type IO struct {
	StorageReadBytes  *float64 `json:"storage_read_bytes"`
	StorageWriteBytes *float64 `json:"storage_write_bytes"`
	StorageSource     string   `json:"storage_source"`
	SyscallReadBytes  *float64 `json:"syscall_read_bytes"`
	SyscallWriteBytes *float64 `json:"syscall_write_bytes"`
	Syscalls          *float64 `json:"syscalls"`
	BytesPerSyscall   *float64 `json:"bytes_per_syscall"`
	SyscallsPerSecond *float64 `json:"syscalls_per_second"`
	BlockReadBytes    *float64 `json:"block_read_bytes"`
	BlockWriteBytes   *float64 `json:"block_write_bytes"`
	PressureSome      *float64 `json:"pressure_some_ratio"`
}

// Network is IP traffic of the job's sockets.
type Network struct {
	ReceiveBytes  *float64 `json:"receive_bytes"`
	TransmitBytes *float64 `json:"transmit_bytes"`
}

// Processes are the job's largest counts at any sample, summed over nodes.
type Processes struct {
	MaxProcesses *float64 `json:"max_processes"`
	MaxThreads   *float64 `json:"max_threads"`
	MaxOpenFDs   *float64 `json:"max_open_fds"`
}

// Energy attributed to the job.
type Energy struct {
	Joules         *float64 `json:"joules"`
	KWh            *float64 `json:"kwh"`
	HostSource     string   `json:"host_source"`
	GPUJoules      *float64 `json:"gpu_joules"`
	EmissionsGrams *float64 `json:"emissions_grams"`
}

// Node is the figures of one node of the job.
type Node struct {
	Name                 string   `json:"name"`
	Cores                float64  `json:"cores"`
	CPUUsedSeconds       *float64 `json:"cpu_used_seconds"`
	CPUEfficiency        *float64 `json:"cpu_efficiency"`
	MemoryPeakBytes      *float64 `json:"memory_peak_bytes"`
	MemoryRequestedBytes *float64 `json:"memory_requested_bytes"`
	MemoryPeakRatio      *float64 `json:"memory_peak_ratio"`
	OOMKills             *float64 `json:"oom_kills"`
	GPUs                 int      `json:"gpus"`
}

// Chart is a time series the HTML page draws; points are [unix seconds, value].
type Chart struct {
	ID        string        `json:"id"`
	Title     string        `json:"title"`
	Unit      string        `json:"unit"`
	Series    []ChartSeries `json:"series"`
	Reference *Reference    `json:"reference"`
}

// ChartSeries is one line of a chart.
type ChartSeries struct {
	Name   string       `json:"name"`
	Points [][2]float64 `json:"points"`
}

// Reference is a horizontal line: what the job asked for.
type Reference struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"`
}

// Severity of a warning.
const (
	Critical = "critical"
	Warn     = "warning"
	Info     = "info"
)

// Warning is one finding with what to do about it.
type Warning struct {
	ID        string  `json:"id"`
	Severity  string  `json:"severity"`
	Node      string  `json:"node"`
	Message   string  `json:"message"`
	Advice    string  `json:"advice"`
	Value     float64 `json:"value"`
	Threshold float64 `json:"threshold"`
}

func ptr(v float64) *float64 { return &v }
