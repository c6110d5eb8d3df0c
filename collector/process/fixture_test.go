// SPDX-License-Identifier: Apache-2.0

package process

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Fake procfs trees for the process collector: the golden fixture under
// testdata/process and the generated trees of the benchmark. The file
// formats follow a real 6.x kernel's /proc/<pid>/{stat,status,io}.

type procFakeThread struct {
	tid          int
	state        string
	start        uint64
	vol, invol   uint64
	rchar, wchar uint64
	rbytes       uint64
	wbytes       uint64
}

type procFakeProc struct {
	pid          int
	ppid         int // 0: 1
	comm         string
	state        string
	exe          string // symlink target; "" leaves no exe link (zombie, kernel thread)
	flags        uint64
	utime, stime uint64
	start        uint64
	threads      []procFakeThread // nil: one thread, the leader, in the process's state
	fds          []string         // symlink targets of fd/0, fd/1, ...
}

func (p procFakeProc) allThreads() []procFakeThread {
	if p.threads != nil {
		return p.threads
	}
	return []procFakeThread{{tid: p.pid, state: p.state, start: p.start, vol: 10, invol: 2}}
}

// procStatLine renders /proc/<pid>/stat (52 fields, as in Linux 6.x).
func procStatLine(pid, ppid int, comm, state string, flags, utime, stime uint64, nthreads int, start uint64) string {
	return fmt.Sprintf("%d (%s) %s %d %d %d 0 -1 %d 99 0 0 0 %d %d 0 0 20 0 %d 0 %d 3133440 358 18446744073709551615 94428150521856 94428150541737 140726228943920 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0 94428150557744 94428150559360 94428205568000 140726228945405 140726228945425 140726228945425 140726228946923 0\n",
		pid, comm, state, ppid, pid, pid, flags, utime, stime, nthreads, start)
}

var procStateNames = map[string]string{"R": "R (running)", "S": "S (sleeping)", "D": "D (disk sleep)", "T": "T (stopped)", "t": "t (tracing stop)", "Z": "Z (zombie)", "I": "I (idle)"}

func procStatusText(comm, state string, tgid, pid, nthreads int, vol, invol uint64) string {
	return fmt.Sprintf(`Name:	%s
Umask:	0022
State:	%s
Tgid:	%d
Ngid:	0
Pid:	%d
PPid:	1
TracerPid:	0
Uid:	1001	1001	1001	1001
Gid:	1001	1001	1001	1001
FDSize:	64
Groups:	1001 
NStgid:	%d
NSpid:	%d
NSpgid:	%d
NSsid:	%d
Kthread:	0
VmPeak:	    3060 kB
VmSize:	    3060 kB
VmLck:	       0 kB
VmPin:	       0 kB
VmHWM:	    1636 kB
VmRSS:	    1636 kB
RssAnon:	     116 kB
RssFile:	    1520 kB
RssShmem:	       0 kB
VmData:	     360 kB
VmStk:	     132 kB
VmExe:	      20 kB
VmLib:	    1528 kB
VmPTE:	      44 kB
VmSwap:	       0 kB
HugetlbPages:	       0 kB
CoreDumping:	0
THP_enabled:	1
Threads:	%d
SigQ:	0/96365
SigPnd:	0000000000000000
ShdPnd:	0000000000000000
SigBlk:	0000000000000000
SigIgn:	0000000000000000
SigCgt:	0000000000000000
CapInh:	0000000000000000
CapPrm:	0000000000000000
CapEff:	0000000000000000
CapBnd:	000001ffffffffff
CapAmb:	0000000000000000
NoNewPrivs:	0
Seccomp:	0
Seccomp_filters:	0
Cpus_allowed:	3
Cpus_allowed_list:	0-1
Mems_allowed_list:	0
voluntary_ctxt_switches:	%d
nonvoluntary_ctxt_switches:	%d
`, comm, procStateNames[state], tgid, pid, tgid, pid, tgid, tgid, nthreads, vol, invol)
}

func procIOText(rchar, wchar, rbytes, wbytes uint64) string {
	return fmt.Sprintf("rchar: %d\nwchar: %d\nsyscr: %d\nsyscw: %d\nread_bytes: %d\nwrite_bytes: %d\ncancelled_write_bytes: 0\n",
		rchar, wchar, rchar/4096+1, wchar/4096+1, rbytes, wbytes)
}

// writeProcFake writes /proc/<pid> of p under root.
func writeProcFake(tb testing.TB, root string, p procFakeProc) {
	tb.Helper()
	dir := filepath.Join(root, strconv.Itoa(p.pid))
	threads := p.allThreads()
	var sum procFakeThread
	for _, t := range threads {
		sum.vol += t.vol
		sum.invol += t.invol
		sum.rchar += t.rchar
		sum.wchar += t.wchar
		sum.rbytes += t.rbytes
		sum.wbytes += t.wbytes
	}
	write := func(path, text string) {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o444); err != nil {
			tb.Fatal(err)
		}
	}
	link := func(target, path string) {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.Symlink(target, path); err != nil {
			tb.Fatal(err)
		}
	}
	ppid := p.ppid
	if ppid == 0 {
		ppid = 1
	}
	write(filepath.Join(dir, "stat"), procStatLine(p.pid, ppid, p.comm, p.state, p.flags, p.utime, p.stime, len(threads), p.start))
	// The process-wide files hold the leader's context switches (as the
	// kernel does) but the whole group's IO.
	write(filepath.Join(dir, "status"), procStatusText(p.comm, p.state, p.pid, p.pid, len(threads), threads[0].vol, threads[0].invol))
	write(filepath.Join(dir, "io"), procIOText(sum.rchar, sum.wchar, sum.rbytes, sum.wbytes))
	if p.exe != "" {
		link(p.exe, filepath.Join(dir, "exe"))
	}
	if err := os.MkdirAll(filepath.Join(dir, "fd"), 0o755); err != nil {
		tb.Fatal(err)
	}
	for i, target := range p.fds {
		link(target, filepath.Join(dir, "fd", strconv.Itoa(i)))
	}
	for _, t := range threads {
		tdir := filepath.Join(dir, "task", strconv.Itoa(t.tid))
		// A thread's own stat carries its own share of CPU; the collector
		// reads the process-wide one, so the split does not matter here.
		write(filepath.Join(tdir, "stat"), procStatLine(t.tid, ppid, p.comm, t.state, p.flags, p.utime/uint64(len(threads)), p.stime/uint64(len(threads)), len(threads), t.start))
		write(filepath.Join(tdir, "status"), procStatusText(p.comm, t.state, p.pid, t.tid, len(threads), t.vol, t.invol))
		write(filepath.Join(tdir, "io"), procIOText(t.rchar, t.wchar, t.rbytes, t.wbytes))
	}
}

// writeProcFakeJob writes a v2 job directory whose steps list the given pids,
// and a job-props file with its user and account.
func writeProcFakeJob(tb testing.TB, cgroupRoot, propsDir, id, user, account string, steps map[string][]int) {
	tb.Helper()
	job := filepath.Join(cgroupRoot, "system.slice", "slurmstepd.scope", "job_"+id)
	if err := os.MkdirAll(job, 0o755); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(job, "cgroup.procs"), nil, 0o644); err != nil {
		tb.Fatal(err)
	}
	for step, pids := range steps {
		var b strings.Builder
		for _, p := range pids {
			fmt.Fprintf(&b, "%d\n", p)
		}
		if err := os.MkdirAll(filepath.Join(job, step), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(job, step, "cgroup.procs"), []byte(b.String()), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	if err := os.MkdirAll(propsDir, 0o755); err != nil {
		tb.Fatal(err)
	}
	props := fmt.Sprintf("SLURM_JOB_ID=%s\nSLURM_JOB_USER=%s\nSLURM_JOB_ACCOUNT=%s\nSLURM_CLUSTER_NAME=test\nSLURM_JOB_START_TIME=1795000000\n", id, user, account)
	if err := os.WriteFile(filepath.Join(propsDir, id), []byte(props), 0o644); err != nil {
		tb.Fatal(err)
	}
}

// goldenFixture is testdata/process: two busy jobs and an empty one, with
// every thread state, a zombie, a kernel thread, an exited pid, a deleted
// executable, duplicate fds and a path that only looks like it is under
// /scratch.
func writeProcGoldenFixture(tb testing.TB, root string) {
	proc := filepath.Join(root, "proc")
	cg := filepath.Join(root, "cgroup")
	props := filepath.Join(root, "props")
	procs := []procFakeProc{
		{pid: 2, comm: "kthreadd", state: "S", flags: 0x00208040, start: 1},
		{pid: 1000, comm: "sleep", state: "S", exe: "/usr/bin/sleep", start: 5000, fds: []string{"/dev/null", "/dev/null", "/dev/null"}},
		{pid: 1001, comm: "slurm_script", state: "S", exe: "/usr/bin/bash", utime: 5, stime: 3, start: 5010,
			fds: []string{"/dev/null", "/scratch/alice/run.log", "pipe:[4001]"}},
		{pid: 1002, ppid: 1001, comm: "python3", state: "R", exe: "/usr/bin/python3.11", utime: 12000, stime: 345, start: 5020,
			threads: []procFakeThread{
				{tid: 1002, state: "R", start: 5020, vol: 100, invol: 50, rchar: 1 << 20, wchar: 4096, rbytes: 8192, wbytes: 4096},
				{tid: 1003, state: "R", start: 5030, vol: 7, invol: 900, rchar: 1 << 10},
				{tid: 1004, state: "S", start: 5030, vol: 3000, invol: 1},
				{tid: 1005, state: "D", start: 5031, vol: 20, invol: 3, rchar: 1 << 30, rbytes: 1 << 30},
			},
			fds: []string{"/dev/pts/0", "/scratch/alice/data.h5", "/scratch/alice/data.h5", "socket:[5001]", "/scratchy/notscratch", "anon_inode:[eventfd]", "/home/alice/.config/x (deleted)"}},
		{pid: 1006, ppid: 1001, comm: "helper", state: "Z", utime: 40, stime: 2, start: 5040},
		{pid: 1007, ppid: 1001, comm: "vim", state: "T", exe: "/usr/bin/vim.basic", utime: 1, stime: 1, start: 5050, fds: []string{"/home/alice/notes.txt"}},
		{pid: 1008, ppid: 1001, comm: "tool", state: "S", exe: "/opt/tool/bin/tool (deleted)", utime: 200, stime: 50, start: 5060,
			threads: []procFakeThread{
				{tid: 1008, state: "S", start: 5060, vol: 5, invol: 5, wchar: 1 << 16, wbytes: 1 << 16},
				{tid: 1010, state: "t", start: 5061, vol: 1, invol: 1},
			}},
		{pid: 2001, comm: "solver", state: "R", exe: "/opt/app/bin/solver", utime: 50000, stime: 1000, start: 7000,
			threads: []procFakeThread{
				{tid: 2001, state: "R", start: 7000, vol: 10, invol: 4000, rchar: 100, wchar: 200, rbytes: 4096, wbytes: 8192},
				{tid: 2005, state: "S", start: 7001, vol: 600, invol: 2},
			},
			fds: []string{"/scratch/bob/out.dat", "/scratch/bob/in.dat", "/home/bob/input.cfg", "/scratch"}},
		{pid: 2002, ppid: 2001, comm: "solver", state: "D", exe: "/opt/app/bin/solver", utime: 30000, stime: 0, start: 7002, fds: []string{"/scratch/bob/out.1"}},
		{pid: 2003, comm: "sleep", state: "S", exe: "/usr/bin/sleep", start: 6900},
	}
	for _, p := range procs {
		writeProcFake(tb, proc, p)
	}
	// 1009 exited between cgroup.procs and /proc: silently left out.
	writeProcFakeJob(tb, cg, props, "100", "alice", "phys", map[string][]int{
		"step_extern": {1000},
		"step_batch":  {1001, 1002, 1006, 1007, 1008, 1009, 2},
	})
	writeProcFakeJob(tb, cg, props, "200", "bob", "chem", map[string][]int{
		"step_extern": {2003},
		"step_0":      {2001, 2002},
	})
	writeProcFakeJob(tb, cg, props, "300", "carol", "bio", map[string][]int{"step_batch": nil})
}
