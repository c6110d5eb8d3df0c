//go:build ignore

// SPDX-License-Identifier: GPL-2.0
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

char LICENSE[] SEC("license") = "GPL";

// Set at load time by the Go loader.
volatile const u32 v2_job_level = 3;   // 0: ignore the v2 hierarchy
volatile const u32 v1_job_level = 3;
volatile const u32 v1_subsys = 0;      // 0 none, 1 cpuacct, 2 memory
volatile const u32 have_mptcp = 0;     // bpf_skc_to_mptcp_sock is usable

// job_key names a job cgroup: hierarchy 0 is v2; v1 ids restart at 1 in
// every hierarchy, so the hierarchy id is part of the key.
struct job_key {
	u32 hierarchy;
	u32 pad;
	u64 cgroup_id;
};

struct counters {
	u64 cpu_ns;         // folded at switch-out, on this CPU
	u64 cpu_ns_running; // folded by fold_running for a slice running on this CPU
	u64 rchar;
	u64 wchar;
	u64 syscr;
	u64 syscw;
	u64 read_bytes;
	u64 write_bytes;
	u64 rx_bytes;
	u64 tx_bytes;
	u64 rx_packets;
	u64 tx_packets;
};

// task_last is what a task's counters were at its previous switch-out, plus
// a one-entry cache of the job check for its job-level ancestor.
struct task_last {
	u64 runtime;
	u64 rchar;
	u64 wchar;
	u64 syscr;
	u64 syscw;
	u64 read_bytes;
	u64 write_bytes;
	u64 cand_id;   // kn id of the last job-level ancestor checked
	u32 cand_job;  // 1 if that ancestor is a job_* directory
	u32 cand_hier;
};

enum self_counter {
	SELF_OVERFLOW = 0,    // an entry could not be added: map full
	SELF_DYING = 1,       // a slice of a task whose job cgroup is going away
	SELF_SEEDED = 2,      // tasks seeded by the iter/task pass
	SELF_NET_MPTCP = 3,   // packets attributed through the MPTCP parent
	SELF_MAX = 4,
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 1024); // replaced by --bpf.max-jobs
	__type(key, struct job_key);
	__type(value, struct counters);
} job_counters SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct task_last);
} task_last SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC | BPF_F_CLONE);
	__type(key, int);
	__type(value, struct job_key);
} sock_job SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, SELF_MAX);
	__type(key, u32);
	__type(value, u64);
} self_counters SEC(".maps");

// Force the types into BTF for bpf2go -type.
const struct job_key *unused_job_key __attribute__((unused));
const struct counters *unused_counters __attribute__((unused));

static __always_inline void self_inc(u32 idx)
{
	u64 *v = bpf_map_lookup_elem(&self_counters, &idx);
	if (v)
		__sync_fetch_and_add(v, 1);
}

// ancestor walks up from c to the cgroup at level; NULL if c is higher.
static __always_inline struct cgroup *ancestor(struct cgroup *c, u32 level)
{
	int l = c->level;
	if (l < (int)level)
		return NULL;
#pragma unroll
	for (int i = 0; i < 8; i++) {
		if (l <= (int)level)
			break;
		struct cgroup_subsys_state *p = c->self.parent;
		if (!p)
			return NULL;
		// p->cgroup, not container_of: the verifier keeps the css type.
		c = p->cgroup;
		if (!c)
			return NULL;
		l--;
	}
	if (l != (int)level)
		return NULL;
	return c;
}

// is_crockford is Slurm's base-32 alphabet for SLUIDs (Crockford's: digits
// and upper-case letters without I, L, O and U).
static __always_inline bool is_crockford(char ch)
{
	if (ch >= '0' && ch <= '9')
		return true;
	return ch >= 'A' && ch <= 'Z' && ch != 'I' && ch != 'L' && ch != 'O' && ch != 'U';
}

// is_job_dir accepts the two names Slurm gives a job's directory: job_<id>
// (decimal, up to 12 digits as discovery reads it) and, from Slurm 26.05 on
// cgroup v2, the job's SLUID: 's' and 13 base-32 characters (sDVNM87TZNTA00).
static __always_inline bool is_job_dir(struct cgroup *c)
{
	char n[20] = {};
	const char *p = BPF_CORE_READ(c, kn, name);
	// len counts the NUL; the longest name, job_ and 12 digits, has 16.
	long len = bpf_probe_read_kernel_str(n, sizeof(n), p);
	if (len < 2 || len > 17)
		return false;
	if (n[0] == 'j' && n[1] == 'o' && n[2] == 'b' && n[3] == '_') {
		if (len < 6)
			return false;
#pragma unroll
		for (int i = 4; i < 16; i++) {
			if (i >= len - 1)
				break;
			if (n[i] < '0' || n[i] > '9')
				return false;
		}
		return true;
	}
	if (n[0] != 's' || len != 15)
		return false;
#pragma unroll
	for (int i = 1; i < 14; i++) {
		if (!is_crockford(n[i]))
			return false;
	}
	return true;
}

// v1_cgroup returns the task's cgroup in the chosen v1 hierarchy.
static __always_inline struct cgroup *v1_cgroup(struct css_set *cs)
{
	struct cgroup_subsys_state *css = NULL;
	if (v1_subsys == 1 && bpf_core_enum_value_exists(enum cgroup_subsys_id, cpuacct_cgrp_id))
		css = cs->subsys[bpf_core_enum_value(enum cgroup_subsys_id, cpuacct_cgrp_id)];
	else if (v1_subsys == 2 && bpf_core_enum_value_exists(enum cgroup_subsys_id, memory_cgrp_id))
		css = cs->subsys[bpf_core_enum_value(enum cgroup_subsys_id, memory_cgrp_id)];
	if (!css)
		return NULL;
	return css->cgroup;
}

// job_cgroup finds the task's job-level cgroup: v2 first, then the chosen v1
// hierarchy. last (may be NULL) caches the name check.
static __always_inline struct cgroup *job_cgroup(struct task_struct *t, struct task_last *last)
{
	struct css_set *cs = t->cgroups;
	struct cgroup *c = NULL;
	if (!cs)
		return NULL;
	if (v2_job_level) {
		struct cgroup *d = cs->dfl_cgrp;
		if (d)
			c = ancestor(d, v2_job_level);
	}
	if (!c && v1_subsys) {
		struct cgroup *v = v1_cgroup(cs);
		if (v)
			c = ancestor(v, v1_job_level);
		// A controller bound to v2 has its css in the v2 tree: not v1.
		if (c && (!c->root || c->root->hierarchy_id == 0))
			c = NULL;
	}
	if (!c)
		return NULL;
	u64 id = c->kn->id;
	if (last && last->cand_id == id)
		return last->cand_job ? c : NULL;
	bool job = is_job_dir(c);
	if (last) {
		last->cand_id = id;
		last->cand_job = job;
	}
	return job ? c : NULL;
}

static __always_inline bool key_of(struct cgroup *c, struct job_key *k)
{
	k->hierarchy = c->root->hierarchy_id;
	k->pad = 0;
	k->cgroup_id = c->kn->id;
	return true;
}

// counters_for returns this CPU's counters of the job, adding the entry if
// needed. A cgroup already offline gets no new entry (its rmdir cleanup may
// have run already).
static __always_inline struct counters *counters_for(struct job_key *k, struct cgroup *c)
{
	struct counters *v = bpf_map_lookup_elem(&job_counters, k);
	if (v)
		return v;
	if (c && !(c->self.flags & CSS_ONLINE /* anonymous enum, stable since 3.x */)) {
		self_inc(SELF_DYING);
		return NULL;
	}
	struct counters zero = {};
	long err = bpf_map_update_elem(&job_counters, k, &zero, BPF_NOEXIST);
	if (err && err != -17 /* EEXIST */) {
		self_inc(SELF_OVERFLOW);
		return NULL;
	}
	return bpf_map_lookup_elem(&job_counters, k);
}

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
	last->runtime = t->se.sum_exec_runtime;
	last->rchar = t->ioac.rchar;
	last->wchar = t->ioac.wchar;
	last->syscr = t->ioac.syscr;
	last->syscw = t->ioac.syscw;
	last->read_bytes = t->ioac.read_bytes;
	last->write_bytes = t->ioac.write_bytes;
	self_inc(SELF_SEEDED);
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
	if (!k && have_mptcp) {
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
