// SPDX-License-Identifier: Apache-2.0

// Package fixturegen builds large cgroup v2 trees shaped like a real
// Slurm node, for benchmarks and scale tests.
package fixturegen

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// v2Files is the interface file set of a non-root cgroup v2 directory on a
// 6.x kernel with cpu, cpuset, io, memory, pids, hugetlb, rdma and misc
// enabled: what an exporter that walks every file would open.
var v2Files = strings.Fields(`cgroup.controllers cgroup.events cgroup.freeze cgroup.kill cgroup.max.depth
cgroup.max.descendants cgroup.pressure cgroup.procs cgroup.stat cgroup.subtree_control cgroup.threads
cgroup.type cpu.idle cpu.max cpu.max.burst cpu.pressure cpu.stat cpu.stat.local cpu.uclamp.max cpu.uclamp.min
cpu.weight cpu.weight.nice cpuset.cpus cpuset.cpus.effective cpuset.cpus.exclusive
cpuset.cpus.exclusive.effective cpuset.cpus.partition cpuset.mems cpuset.mems.effective
hugetlb.1GB.current hugetlb.1GB.events hugetlb.1GB.events.local hugetlb.1GB.max hugetlb.1GB.numa_stat
hugetlb.1GB.rsvd.current hugetlb.1GB.rsvd.max hugetlb.2MB.current hugetlb.2MB.events hugetlb.2MB.events.local
hugetlb.2MB.max hugetlb.2MB.numa_stat hugetlb.2MB.rsvd.current hugetlb.2MB.rsvd.max io.max io.pressure
io.prio.class io.stat io.weight irq.pressure memory.current memory.events memory.events.local memory.high
memory.low memory.max memory.min memory.numa_stat memory.oom.group memory.peak memory.pressure
memory.reclaim memory.stat memory.swap.current memory.swap.events memory.swap.high memory.swap.max
memory.swap.peak memory.zswap.current memory.zswap.max memory.zswap.writeback misc.current misc.events
misc.max pids.current pids.events pids.max pids.peak rdma.current rdma.max`)

var contents = map[string]string{
	"cgroup.controllers":    "cpuset cpu io memory hugetlb pids rdma misc\n",
	"memory.current":        "2147483648\n",
	"memory.peak":           "3221225472\n",
	"memory.max":            "4294967296\n",
	"memory.swap.current":   "0\n",
	"memory.swap.max":       "max\n",
	"memory.events":         "low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\noom_group_kill 0\n",
	"cpu.stat":              "usage_usec 7200000000\nuser_usec 6800000000\nsystem_usec 400000000\ncore_sched.force_idle_usec 0\nnr_periods 0\nnr_throttled 0\nthrottled_usec 0\nnr_bursts 0\nburst_usec 0\n",
	"cpuset.cpus.effective": "0-3\n",
	"cpuset.cpus":           "0-3\n",
	"cpu.pressure":          "some avg10=0.00 avg60=0.00 avg300=0.00 total=1523000\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n",
	"memory.pressure":       "some avg10=0.00 avg60=0.00 avg300=0.00 total=250000\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=120000\n",
	"io.pressure":           "some avg10=0.00 avg60=0.00 avg300=0.00 total=9000000\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=7500000\n",
	"io.stat":               "8:0 rbytes=1048576 wbytes=524288000 rios=256 wios=4000 dbytes=0 dios=0\n",
	"pids.current":          "12\n",
	"pids.max":              "max\n",
	"memory.stat": `anon 1879048192
file 241172480
kernel 12582912
kernel_stack 1048576
pagetables 6291456
sec_pagetables 0
percpu 0
sock 0
vmalloc 0
shmem 4194304
zswap 0
zswapped 0
file_mapped 20971520
file_dirty 1048576
file_writeback 0
swapcached 0
anon_thp 629145600
file_thp 0
shmem_thp 0
inactive_anon 1879048192
active_anon 4194304
inactive_file 209715200
active_file 31457280
unevictable 0
slab_reclaimable 2097152
slab_unreclaimable 1048576
slab 3145728
workingset_refault_anon 0
workingset_refault_file 0
workingset_activate_anon 0
workingset_activate_file 0
workingset_restore_anon 0
workingset_restore_file 0
workingset_nodereclaim 0
pgscan 0
pgsteal 0
pgfault 510000
pgmajfault 12
pgrefill 0
pgactivate 0
pgdeactivate 0
pglazyfree 0
pglazyfreed 0
thp_fault_alloc 300
thp_collapse_alloc 0
`,
}

// V2Node writes a cgroup v2 root at dir with n Slurm jobs under
// system.slice/slurmstepd.scope; each job has batch, extern and one srun
// step, each with slurm/ and user/task_0/ (13 directories per job), and
// every directory has the full interface file set.
func V2Node(dir string, n int) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := writeFile(filepath.Join(dir, "cgroup.controllers"), contents["cgroup.controllers"]); err != nil {
		return err
	}
	scope := filepath.Join(dir, "system.slice", "slurmstepd.scope")
	for i := range n {
		job := filepath.Join(scope, fmt.Sprintf("job_%d", 1000+i))
		dirs := []string{job}
		for _, s := range []string{"step_batch", "step_extern", "step_0"} {
			dirs = append(dirs, filepath.Join(job, s), filepath.Join(job, s, "slurm"),
				filepath.Join(job, s, "user"), filepath.Join(job, s, "user", "task_0"))
		}
		for _, d := range dirs {
			if err := os.MkdirAll(d, 0o755); err != nil {
				return err
			}
			for _, f := range v2Files {
				if err := writeFile(filepath.Join(d, f), contents[f]); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func writeFile(path, content string) error {
	if content == "" {
		content = "0\n"
	}
	return os.WriteFile(path, []byte(content), 0o644)
}

// BenchDir is where benchmark trees go: tmpfs when the machine has one,
// since cgroupfs lives in memory too and a disk-backed tree would measure
// the disk, not jobscope.
func BenchDir() string {
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		return "/dev/shm"
	}
	return os.TempDir()
}
