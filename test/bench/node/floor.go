// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"syscall"
	"time"
)

// Files of a job's cgroup that one default (basic) scrape reads; limits
// and cpusets are cached between scrapes, so they are not in the floor.
var (
	v2Files = []string{"memory.current", "cpu.stat", "memory.peak", "memory.stat", "memory.swap.current",
		"memory.events", "cpu.pressure", "memory.pressure", "io.pressure", "io.stat"}
	v2ProcsDirs = []string{"", "step_batch", "step_batch/slurm", "step_batch/user", "step_batch/user/task_0",
		"step_extern", "step_extern/slurm", "step_extern/user", "step_extern/user/task_0",
		"step_0", "step_0/slurm", "step_0/user", "step_0/user/task_0"}
	v1Files = map[string][]string{
		"memory":  {"memory.usage_in_bytes", "memory.max_usage_in_bytes", "memory.stat"},
		"cpuacct": {"cpuacct.usage", "cpuacct.stat", "cpuacct.usage_percpu"},
		"cpu":     {"cpu.stat"},
		"blkio":   {"blkio.throttle.io_service_bytes_recursive"},
	}
)

// floorFiles lists, for job i, every file a default scrape needs: the
// job's directory listing and cgroup.procs files (discovery), its cgroup
// files, and per process /proc/<pid>/stat, /proc/<pid>/io and the fd
// directory. A trailing "/" lists a directory.
func floorFiles(cgroup string, sh shape, i int, pids []int) []string {
	job := jobDir(cgroup, sh, i)
	out := []string{job + "/"}
	if sh.v1 {
		for _, d := range append([]string{""}, "step_batch", "step_batch/task_0", "step_extern", "step_extern/task_0", "step_0", "step_0/task_0") {
			out = append(out, filepath.Join(job, d, "cgroup.procs"), filepath.Join(job, d, "memory.oom_control"))
		}
		ctrls := make([]string, 0, len(v1Files))
		for c := range v1Files {
			ctrls = append(ctrls, c)
		}
		sort.Strings(ctrls)
		for _, c := range ctrls {
			dir := filepath.Join(cgroup, c, v1Top(sh), "uid_1000", filepath.Base(job))
			for _, f := range v1Files[c] {
				out = append(out, filepath.Join(dir, f))
			}
		}
	} else {
		for _, d := range v2ProcsDirs {
			out = append(out, filepath.Join(job, d, "cgroup.procs"))
		}
		for _, f := range v2Files {
			out = append(out, filepath.Join(job, f))
		}
	}
	for _, p := range pids {
		out = append(out, fmt.Sprintf("/proc/%d/stat", p), fmt.Sprintf("/proc/%d/io", p), fmt.Sprintf("/proc/%d/fd/", p))
	}
	return out
}

// cgroupFiles are the floor's files outside procfs: the cgroup collector's.
func cgroupFiles(files []string) []string {
	var out []string
	for _, f := range files {
		if !strings.HasPrefix(f, "/proc/") {
			out = append(out, f)
		}
	}
	return out
}

// floor reads every file once, sequentially, runs times, and returns the
// median wall time and the mean CPU time (this thread's) of one pass.
func floor(files []string, runs int) (wall, cpu time.Duration, err error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	buf := make([]byte, 64<<10)
	var ds []time.Duration
	cpu0 := threadCPU()
	for range runs {
		start := time.Now()
		for _, f := range files {
			if err := readOne(f, buf); err != nil {
				return 0, 0, err
			}
		}
		ds = append(ds, time.Since(start))
	}
	cpu = (threadCPU() - cpu0) / time.Duration(runs)
	sort.Slice(ds, func(a, b int) bool { return ds[a] < ds[b] })
	return ds[len(ds)/2], cpu, nil
}

func readOne(path string, buf []byte) error {
	if dir, ok := strings.CutSuffix(path, "/"); ok {
		f, err := os.Open(dir)
		if err != nil {
			return err
		}
		_, err = f.Readdirnames(-1)
		f.Close()
		return err
	}
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("floor: %s: %w", path, err)
	}
	defer syscall.Close(fd)
	for {
		n, err := syscall.Read(fd, buf)
		if err != nil || n <= 0 {
			return err
		}
	}
}

func threadCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(1 /* RUSAGE_THREAD */, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
