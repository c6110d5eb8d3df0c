//go:build ignore

// SPDX-License-Identifier: GPL-2.0-only
// jobscope: per-job, per-CPU CPU time, IO and network counters.
//
// CPU and IO are folded in at every switch-out of a task: the task's own
// counters (se.sum_exec_runtime, ioac) minus what this program saw last time,
// kept in task storage. The scheduler's runtime is what cpuacct and cpu.stat
// charge, so the two agree exactly; a per-CPU "switch-in" slot would lose the
// slice after every switch-out the kernel does not deliver to BPF.
//
// A task that stays on its CPU is not switched out, so the reader also runs
// fold_running (iter/task) before each read: it claims the runtime of every
// running job task since its last fold. Both paths claim runtime by moving
// the task's baseline forward with a compare-and-swap, so each nanosecond is
// claimed once (see claim_runtime).
//
// Network: sockets are tagged with their creator's job (cgroup/sock_create,
// and TCP_LISTEN for the listeners whose accepted children inherit the tag via
// BPF_F_CLONE); cgroup_skb on the v2 root counts by tag. Ingress runs in
// softirq under any task, so the current task cannot be used there.

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "jobscope.h"

char LICENSE[] SEC("license") = "GPL";

// claim_runtime moves the task's runtime baseline from what it was to now
// and returns the difference, or 0 if another path moved it past now. The
// baseline only grows (a swap is made only to a larger value), so no two
// claims overlap: a switch-out and a concurrent fold_running on another CPU
// each get a disjoint part, and together exactly what the task ran.
static __always_inline u64 claim_runtime(struct task_last *last, u64 now)
{
#pragma unroll
	for (int i = 0; i < 4; i++) {
		u64 old = last->runtime;
		if (now <= old)
			return 0;
		if (__sync_val_compare_and_swap(&last->runtime, old, now) == old)
			return now - old;
	}
	// Only readers racing again and again get here; what is left is claimed
	// by the task's next fold.
	return 0;
}

// account folds the outgoing task's counters into its job's slot of this
// CPU. live: the baseline is shared with fold_running, so it is claimed with
// a compare-and-swap; without fold_running a plain store is enough.
static __always_inline int account(struct task_struct *prev, bool live)
{
	struct task_last *last = bpf_task_storage_get(&task_last, prev, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!last)
		return 0;
	u64 rt = prev->se.sum_exec_runtime;
	u64 d_rt;
	if (live) {
		d_rt = claim_runtime(last, rt);
	} else {
		d_rt = rt - last->runtime;
		last->runtime = rt;
	}
	u64 rchar = prev->ioac.rchar, wchar = prev->ioac.wchar;
	u64 syscr = prev->ioac.syscr, syscw = prev->ioac.syscw;
	u64 rb = prev->ioac.read_bytes, wb = prev->ioac.write_bytes;
	u64 d_rchar = rchar - last->rchar, d_wchar = wchar - last->wchar;
	u64 d_syscr = syscr - last->syscr, d_syscw = syscw - last->syscw;
	u64 d_rb = rb - last->read_bytes, d_wb = wb - last->write_bytes;
	last->rchar = rchar;
	last->wchar = wchar;
	last->syscr = syscr;
	last->syscw = syscw;
	last->read_bytes = rb;
	last->write_bytes = wb;

	struct cgroup *c = job_cgroup(prev, last);
	if (!c)
		return 0;
	struct job_key k;
	key_of(c, &k);
	struct counters *v = counters_for(&k, c);
	if (!v)
		return 0;
	// Interrupts are off under the runqueue lock: plain adds on this CPU's
	// slot cannot race with the (atomic) network adds to other fields, and
	// fold_running writes cpu_ns_running only.
	v->cpu_ns += d_rt;
	v->rchar += d_rchar;
	v->wchar += d_wchar;
	v->syscr += d_syscr;
	v->syscw += d_syscw;
	v->read_bytes += d_rb;
	v->write_bytes += d_wb;
	return 0;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(account_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	return account(prev, true);
}

// account_switch_plain is account_switch for kernels that cannot run
// fold_running (no compare-and-swap before 5.12): CPU time of a task still
// on its CPU is counted when it leaves.
SEC("tp_btf/sched_switch")
int BPF_PROG(account_switch_plain, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	return account(prev, false);
}

struct task_struct___pre516 {
	unsigned int cpu;
} __attribute__((preserve_access_index));

// task_cpu: the field is in thread_info since 5.16, in task_struct before.
static __always_inline u32 task_cpu(struct task_struct *t)
{
	if (bpf_core_field_exists(t->thread_info.cpu))
		return BPF_CORE_READ(t, thread_info.cpu);
	return BPF_CORE_READ((struct task_struct___pre516 *)t, cpu);
}

struct task_struct___on_cpu_u8 {
	u8 on_cpu;
} __attribute__((preserve_access_index));

// task_on_cpu: on_cpu is an int up to 7.1 and a single byte in 7.2 (the
// verifier refuses a 4-byte load of it there). The test is a constant after
// relocation, so the verifier never walks the other branch.
static __always_inline int task_on_cpu(struct task_struct *t)
{
	if (bpf_core_field_size(t->on_cpu) == 1)
		return ((struct task_struct___on_cpu_u8 *)t)->on_cpu;
	return t->on_cpu;
}

// fold_running runs before every read of the maps: each job task that is on
// a CPU has the runtime since its last fold added to its job's slot of that
// CPU, so a task that never leaves its CPU is counted up to the read (up to
// the scheduler's last update of its runtime: the last tick or event on that
// CPU, which is when cpu.stat is updated too).
//
// Against a concurrent switch-out of the task on its CPU: both claim with
// claim_runtime, so neither counts what the other took. The baseline is
// read with an atomic (ordered) access before on_cpu and the CPU number; if
// the swap then succeeds, no switch-out completed in between, so the task
// has run on that one CPU since its last fold and the claim belongs there.
SEC("iter/task")
int fold_running(struct bpf_iter__task *ctx)
{
	struct task_struct *t = ctx->task;
	if (!t || !task_on_cpu(t))
		return 0;
	struct cgroup *c = job_cgroup(t, NULL);
	if (!c)
		return 0;
	// A task forked since attach and never switched out has no storage:
	// it starts from zero, as at its first switch-out.
	struct task_last *last = bpf_task_storage_get(&task_last, t, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!last)
		return 0;
	u64 old = __sync_fetch_and_add(&last->runtime, 0);
	if (!task_on_cpu(t))
		return 0;
	u32 cpu = task_cpu(t);
	u64 now = t->se.sum_exec_runtime;
	if (now <= old || __sync_val_compare_and_swap(&last->runtime, old, now) != old)
		return 0;
	struct job_key k;
	key_of(c, &k);
	if (!counters_for(&k, c))
		return 0;
	struct counters *v = bpf_map_lookup_percpu_elem(&job_counters, &k, cpu);
	if (!v)
		return 0;
	// Other readers may add to this slot at the same time; the switch-out
	// path on that CPU never writes this field.
	__sync_fetch_and_add(&v->cpu_ns_running, now - old);
	return 0;
}

// seed_tasks runs once at attach: tasks that already run get their current
// counters as baseline, so only what they do from now on is counted. Tasks
// that have a baseline (pinned task storage of a previous run) keep it.
//
// When that storage is resumed (resume_tasks), a task without a baseline was
// forked after the previous run's seed pass and never switched out while a
// program was attached: it was forked while jobscope was down. Its counters
// started at zero at fork, all of it in its job's time, so its baseline is
// zero, as for a task forked while attached.
SEC("iter/task")
int seed_tasks(struct bpf_iter__task *ctx)
{
	struct task_struct *t = ctx->task;
	if (!t)
		return 0;
	if (bpf_task_storage_get(&task_last, t, 0, 0))
		return 0;
	struct task_last *last = bpf_task_storage_get(&task_last, t, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!last)
		return 0;
	self_inc(SELF_SEEDED);
	// New storage is zeroed: a zero baseline.
	if (resume_tasks)
		return 0;
	last->runtime = t->se.sum_exec_runtime;
	last->rchar = t->ioac.rchar;
	last->wchar = t->ioac.wchar;
	last->syscr = t->ioac.syscr;
	last->syscw = t->ioac.syscw;
	last->read_bytes = t->ioac.read_bytes;
	last->write_bytes = t->ioac.write_bytes;
	return 0;
}

// drop_job removes a job's entry when its cgroup directory is removed.
SEC("tp_btf/cgroup_rmdir")
int BPF_PROG(drop_job, struct cgroup *cgrp, const char *path)
{
	struct job_key k;
	key_of(cgrp, &k);
	bpf_map_delete_elem(&job_counters, &k);
	return 0;
}

static __always_inline void tag_sock(struct sock *sk)
{
	struct task_struct *t = bpf_get_current_task_btf();
	struct cgroup *c = job_cgroup(t, NULL);
	if (!c)
		return;
	struct job_key *tag = bpf_sk_storage_get(&sock_job, sk, 0, BPF_SK_STORAGE_GET_F_CREATE);
	if (tag)
		key_of(c, tag);
}

SEC("cgroup/sock_create")
int tag_socket(struct bpf_sock *sk)
{
	struct task_struct *t = bpf_get_current_task_btf();
	struct cgroup *c = job_cgroup(t, NULL);
	if (!c)
		return 1;
	// cgroup/sock programs pass their context to sk_storage_get.
	struct job_key *tag = bpf_sk_storage_get(&sock_job, sk, 0, BPF_SK_STORAGE_GET_F_CREATE);
	if (tag)
		key_of(c, tag);
	return 1;
}

// Listening sockets of MPTCP are kernel-created subflows that sock_create
// does not see; tag every socket that starts listening.
SEC("tp_btf/inet_sock_set_state")
int BPF_PROG(tag_listener, const struct sock *sk, const int oldstate, const int newstate)
{
	if (newstate != 10 /* TCP_LISTEN */)
		return 0;
	tag_sock((struct sock *)sk);
	return 0;
}

static __always_inline int count_skb(struct __sk_buff *skb, bool egress)
{
	struct bpf_sock *bsk = skb->sk;
	if (!bsk)
		return 1;
	bsk = bpf_sk_fullsock(bsk);
	if (!bsk)
		return 1;
	struct job_key *k = bpf_sk_storage_get(&sock_job, bsk, 0, 0);
	// Only a stream socket can be an MPTCP subflow. The kernel sends ACKs
	// and RSTs for closed connections from its per-CPU control socket, a
	// SOCK_RAW socket with protocol TCP: 6.1's bpf_skc_to_mptcp_sock reads
	// it as a tcp_sock and dereferences garbage (a guest panicked in softirq
	// on Debian 12's 6.1.0-50), so it is never handed one.
	if (!k && have_mptcp && bsk->type == SOCK_STREAM) {
		struct mptcp_sock *msk = bpf_skc_to_mptcp_sock(bsk);
		if (msk) {
			k = bpf_sk_storage_get(&sock_job, msk, 0, 0);
			if (k)
				self_inc(SELF_NET_MPTCP);
		}
	}
	if (!k)
		return 1;
	struct job_key key = *k;
	struct counters *v = counters_for(&key, NULL);
	if (!v)
		return 1;
	// Softirq may interrupt process-context egress on this CPU: atomic adds.
	if (egress) {
		__sync_fetch_and_add(&v->tx_bytes, skb->len);
		__sync_fetch_and_add(&v->tx_packets, 1);
	} else {
		__sync_fetch_and_add(&v->rx_bytes, skb->len);
		__sync_fetch_and_add(&v->rx_packets, 1);
	}
	return 1;
}

SEC("cgroup_skb/ingress")
int count_ingress(struct __sk_buff *skb) { return count_skb(skb, false); }

SEC("cgroup_skb/egress")
int count_egress(struct __sk_buff *skb) { return count_skb(skb, true); }
