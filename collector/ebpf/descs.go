// SPDX-License-Identifier: Apache-2.0

package ebpf

import (
	"github.com/jobscope/jobscope/collector"
)

type ebpfDescs struct {
	cpuCore, cpuOutside, syscallBytes, syscalls, storageBytes, netBytes, netPackets *collector.Desc
	countedSince                                                                    *collector.Desc

	attached, entries, maxEntries, overflows, dying, seeded, mptcp, network *collector.Desc
	runSeconds, runs, misses                                                *collector.Desc
}

func newEBPFDescs() ebpfDescs {
	self := collector.NewDesc
	return ebpfDescs{
		// The cgroup collector's descriptor: one name, one HELP, whichever
		// collector provides the series on this node.
		cpuCore: collector.CPUCoreDesc(),
		cpuOutside: collector.NewJobDesc("slurm_job_cpu_outside_cpuset_seconds_total",
			"CPU time of the job's cgroup on cores outside its cpuset (cpuset.cpus.effective), which have no slurm_job_cpu_core_seconds_total series: mostly slurmstepd's own start in the job's cgroup before Slurm set the cpuset. Per-core plus this is the job's cgroup CPU time since the programs were attached; absent while 0. From the ebpf collector."),
		syscallBytes: collector.NewJobDesc("slurm_job_io_syscall_bytes_total",
			"Bytes the job's tasks passed through read- and write-type syscalls (task io accounting rchar/wchar: files, pipes, sockets, terminals; exited processes included), from the ebpf collector. Not storage traffic.", "direction").Full(),
		syscalls: collector.NewJobDesc("slurm_job_io_syscalls_total",
			"Read- and write-type syscalls of the job's tasks (task io accounting syscr/syscw; exited processes included), from the ebpf collector.", "direction").Full(),
		storageBytes: collector.NewJobDesc("slurm_job_io_storage_bytes_total",
			"Bytes the job's tasks caused to be read from storage and dirtied for writing to it (task io accounting read_bytes/write_bytes: page-cache level, local and network filesystems alike, counted when pages are dirtied, so rewritten or truncated pages count too). Not block-device IO; see slurm_job_block_io_bytes_total for that.", "direction"),
		netBytes: collector.NewJobDesc("slurm_job_network_bytes_total",
			"IP bytes of the sockets the job's tasks created, headers included (cgroup_skb ingress/egress on the cgroup v2 root, by a tag set at socket creation), from the ebpf collector. RDMA and other kernel-bypass traffic is not seen.", "direction"),
		countedSince: collector.NewJobDesc("slurm_job_ebpf_counted_since_timestamp_seconds",
			"When the ebpf collector began counting the job: its first event after the programs were first attached (kept across restarts in the pinned maps). Per-core CPU, syscall and storage IO and network series cover the time since then: for a job that was already running then, this is later than its start and per-core CPU sums to less than cpu.stat.").Full(),
		netPackets: collector.NewJobDesc("slurm_job_network_packets_total",
			"IP packets of the sockets the job's tasks created (cgroup_skb ingress/egress), from the ebpf collector.", "direction").Full(),

		attached:   self("jobscope_bpf_programs_attached", "eBPF programs jobscope has attached."),
		entries:    self("jobscope_bpf_map_entries", "Entries in a jobscope BPF map, read at scrape time.", "map"),
		maxEntries: self("jobscope_bpf_map_max_entries", "Capacity of a jobscope BPF map (--bpf.max-jobs).", "map"),
		overflows:  self("jobscope_bpf_map_overflows_total", "Job entries that could not be added because the BPF map was full; their counts are lost (raise --bpf.max-jobs). Kept in a pinned map across restarts.", "map"),
		dying:      self("jobscope_bpf_dying_cgroup_slices_total", "CPU/IO slices not counted because the task's job cgroup was already being removed (its entry had been dropped). Kept in a pinned map across restarts."),
		seeded:     self("jobscope_bpf_seeded_tasks_total", "Tasks given a starting point by the iter/task pass at attach: their current counters on a fresh start (earlier history is not counted), zero when a restart resumes the pinned per-task baselines (such a task was forked while jobscope was down: counted from its start). Kept in a pinned map across restarts."),
		mptcp:      self("jobscope_bpf_network_mptcp_packets_total", "Packets attributed through the MPTCP parent of a subflow socket."),
		network:    self("jobscope_bpf_network_enabled", "1 if the network programs are attached, 0 if not (no cgroup v2 mount, --bpf.network=false, or the kernel refused them; logged at start)."),
		runSeconds: self("jobscope_bpf_program_run_seconds_total", "Time the kernel spent running a jobscope BPF program (kernel BPF statistics; only while kernel.bpf_stats_enabled=1 or --bpf.stats).", "program"),
		runs:       self("jobscope_bpf_program_runs_total", "Runs of a jobscope BPF program (kernel BPF statistics; only while they are on).", "program"),
		misses:     self("jobscope_bpf_program_recursion_misses_total", "Times the kernel skipped a jobscope BPF program because another BPF program was running on the CPU.", "program"),
	}
}
