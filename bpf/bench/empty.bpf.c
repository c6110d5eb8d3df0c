//go:build ignore

// SPDX-License-Identifier: GPL-2.0-only
// The empty sched_switch program: the baseline make bench-bpf measures
// jobscope's account_switch against, in the same run.
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char LICENSE[] SEC("license") = "GPL";

SEC("tp_btf/sched_switch")
int BPF_PROG(empty_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	return 0;
}
