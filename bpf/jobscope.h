// SPDX-License-Identifier: GPL-2.0-only
// jobscope.h: what jobscope.bpf.c's programs share: load-time settings, the
// map types and maps, and how a task's job cgroup is found and keyed.
#ifndef JOBSCOPE_H
#define JOBSCOPE_H

// Set at load time by the Go loader.
volatile const u32 v2_job_level = 3;   // 0: ignore the v2 hierarchy
volatile const u32 v1_job_level = 3;
volatile const u32 v1_subsys = 0;      // 0 none, 1 cpuacct, 2 memory
volatile const u32 have_mptcp = 0;     // bpf_skc_to_mptcp_sock is usable
// 1: task_last is a previous run's pinned task storage, whose seed pass ran;
// a task without storage was then forked while no program was attached.
volatile const u32 resume_tasks = 0;

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
	// since_ns: CLOCK_BOOTTIME when the entry was made, in the slot of the
	// CPU that made it (0 in the others): when counting began for the job.
	u64 since_ns;
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
	struct counters zero = {.since_ns = bpf_ktime_get_boot_ns()};
	long err = bpf_map_update_elem(&job_counters, k, &zero, BPF_NOEXIST);
	if (err && err != -17 /* EEXIST */) {
		self_inc(SELF_OVERFLOW);
		return NULL;
	}
	return bpf_map_lookup_elem(&job_counters, k);
}

#endif
