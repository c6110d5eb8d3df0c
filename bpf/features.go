// SPDX-License-Identifier: Apache-2.0

package bpf

// Features is what Load asks of the running kernel before it loads
// anything, so that a kernel without a feature gets a log line naming the
// feature and what is lost, not a verifier message. Each method returns nil
// when the feature is there. Config.Features replaces the probes (tests force
// a kernel without one).
type Features interface {
	// BTF is the kernel's type information (CONFIG_DEBUG_INFO_BTF,
	// /sys/kernel/btf/vmlinux), without which no CO-RE program loads.
	BTF() error
	// TaskStorage is task local storage usable from tracing programs
	// (upstream 5.12; the map type itself came in 5.11, for LSM programs
	// only). Every task's counter baseline lives there: without it no CPU or
	// IO counting is possible.
	TaskStorage() error
	// LiveCPU is what fold_running needs to count a task's running slice at
	// each read: bpf_map_lookup_percpu_elem (5.19) and compare-and-swap
	// (5.12). Without it, CPU time is folded in at switch-out only.
	LiveCPU() error
}

// What is lost when a tier of programs cannot load (logged with the cause).
const (
	lostAll = "no eBPF counters: per-core CPU then comes from cpuacct.usage_percpu on cgroup v1 nodes only " +
		"(cgroup v2 has no per-core source), IO from /proc/<pid>/io of live processes (process collector), " +
		"and there are no network counters"
	lostLive = "per-core CPU of a task that stays on its CPU is counted when it leaves the CPU, " +
		"not at each scrape"
)
