// SPDX-License-Identifier: Apache-2.0

package process

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sys/unix"

	"github.com/jobscope/jobscope/collector"
	"github.com/jobscope/jobscope/collector/collectortest"
)

// TestSymlinksNotFollowed: the kernel makes no symlink of /proc/<pid>, its
// stat, io, fd, task/<tid> or status, so one there was planted. Each is
// refused: nothing of its target is exported, the cause is logged once and
// counted, and the job's other processes and the other jobs are exported.
func TestSymlinksNotFollowed(t *testing.T) {
	root := t.TempDir()
	proc := filepath.Join(root, "proc")
	mine := filepath.Join(root, "mine") // files "of the user's", outside procfs
	if err := os.MkdirAll(filepath.Join(mine, "fd"), 0o755); err != nil {
		t.Fatal(err)
	}
	const huge = 1 << 40 // a value that appears only in the link targets
	plant := func(name, text string) string {
		p := filepath.Join(mine, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	ioTarget := plant("io", procIOText(huge, huge, huge, huge))
	statusTarget := plant("status", procStatusText("x", "S", 1002, 1002, 1, huge, huge))
	statTarget := plant("stat", procStatLine(1004, 1, "x", "R", 0, huge, huge, 1, 5040))
	for i := 0; i < 50; i++ {
		if err := os.Symlink("/scratch/not-this-job", filepath.Join(mine, "fd", strconv.Itoa(i))); err != nil {
			t.Fatal(err)
		}
	}

	// Each process's CPU (utime, in ticks) is 100 times its pid's last
	// digit: one second for 1001, two for 1002 (1000: ten)
	thread := func(tid int, start uint64) []procFakeThread {
		return []procFakeThread{{tid: tid, state: "S", start: start, vol: 10, invol: 2, rchar: 100, wchar: 200, rbytes: 4096, wbytes: 8192}}
	}
	for _, p := range []procFakeProc{
		{pid: 1000, comm: "ok", state: "S", utime: 1000, exe: "/usr/bin/ok", start: 5000, threads: thread(1000, 5000), fds: []string{"/scratch/a"}},
		{pid: 1001, comm: "io", state: "S", utime: 100, exe: "/usr/bin/io", start: 5010, threads: thread(1001, 5010), fds: []string{"/scratch/b"}},
		{pid: 1002, comm: "status", state: "S", utime: 200, exe: "/usr/bin/status", start: 5020, threads: thread(1002, 5020)},
		{pid: 1004, comm: "stat", state: "S", utime: 400, exe: "/usr/bin/stat", start: 5040, threads: thread(1004, 5040)},
		{pid: 1005, comm: "fd", state: "S", utime: 500, exe: "/usr/bin/fd", start: 5050, threads: thread(1005, 5050), fds: []string{"/dev/null"}},
		{pid: 1006, comm: "task", state: "S", utime: 600, exe: "/usr/bin/task", start: 5060, threads: thread(1006, 5060)},
		{pid: 2001, comm: "other", state: "S", utime: 100, exe: "/usr/bin/other", start: 7000, threads: thread(2001, 7000), fds: []string{"/scratch/c", "/home/d"}},
	} {
		writeProcFake(t, proc, p)
	}
	replace := func(path, target string) {
		if err := os.RemoveAll(path); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, path); err != nil {
			t.Fatal(err)
		}
	}
	replace(filepath.Join(proc, "1001", "io"), ioTarget)
	replace(filepath.Join(proc, "1002", "task", "1002", "status"), statusTarget)
	// 1003 is job 200's 2001 under job 100's pid: counting it would count
	// one process in two jobs.
	replace(filepath.Join(proc, "1003"), filepath.Join(proc, "2001"))
	replace(filepath.Join(proc, "1004", "stat"), statTarget)
	replace(filepath.Join(proc, "1005", "fd"), filepath.Join(mine, "fd"))
	replace(filepath.Join(proc, "1006", "task", "1006"), filepath.Join(proc, "2001", "task", "2001"))
	writeProcFakeJob(t, filepath.Join(root, "cgroup"), filepath.Join(root, "props"), "100", "alice", "phys",
		map[string][]int{"step_0": {1000, 1001, 1002, 1003, 1004, 1005, 1006}})
	writeProcFakeJob(t, filepath.Join(root, "cgroup"), filepath.Join(root, "props"), "200", "bob", "chem",
		map[string][]int{"step_0": {2001}})

	var logged bytes.Buffer
	problems := collector.NewProblems(slog.New(slog.NewTextHandler(&logged, nil)))
	c := newFixtureProcCollector(t, proc, Options{
		Mounts: []string{"/scratch"}, TopN: 10, Threads: true, IO: IOOn, Level: collector.LevelFull,
	})
	jobs := procFixtureJobs(t, root)
	got100 := procValuesWith(t, c, jobs, "100", problems)
	got200 := procValuesWith(t, c, jobs, "200", problems)

	for k, v := range got100 {
		if v >= huge {
			t.Errorf("job 100: %s = %v comes from a symlink's target", k, v)
		}
	}
	// Readable: 1000, 1001 (less its io), 1002 (less its thread's status),
	// 1005 (less its fds), 1006 (less its thread); refused whole: 1003
	// (/proc/<pid> a symlink) and 1004 (stat a symlink).
	want100 := map[string]float64{
		"slurm_job_processes{state=sleeping}":                       5,
		"slurm_job_threads{state=sleeping}":                         4, // 1000, 1001, 1002, 1005
		"slurm_job_context_switches_total{type=voluntary}":          30,
		"slurm_job_context_switches_total{type=involuntary}":        6,
		"slurm_job_process_storage_io_bytes_total{direction=read}":  4 * 4096,
		"slurm_job_process_storage_io_bytes_total{direction=write}": 4 * 8192,
		"slurm_job_process_syscall_io_bytes_total{direction=read}":  4 * 100,
		"slurm_job_open_fds{}":                                      2,
		"slurm_job_open_files{mount=/scratch}":                      2,
		"slurm_job_process_cpu_seconds_total{exe=/usr/bin/status}":  2,
		"slurm_job_process_syscall_io_bytes_total{direction=write}": 4 * 200,
		"slurm_job_process_cpu_seconds_total{exe=/usr/bin/ok}":      10,
		"slurm_job_process_cpu_seconds_total{exe=/usr/bin/io}":      1,
		"slurm_job_process_cpu_seconds_total{exe=/usr/bin/fd}":      5,
		"slurm_job_process_cpu_seconds_total{exe=/usr/bin/task}":    6,
		"slurm_job_process_cpu_seconds_total{exe=/usr/bin/other}":   -1, // must be absent
		"slurm_job_process_cpu_seconds_total{exe=/usr/bin/stat}":    -1,
	}
	for k, w := range want100 {
		v, ok := got100[k]
		switch {
		case w < 0 && ok:
			t.Errorf("job 100: %s present (%v): a refused process was counted", k, v)
		case w >= 0 && (!ok || v != w):
			t.Errorf("job 100: %s = %v (present %v), want %v", k, v, ok, w)
		}
	}
	// Job 200 is whole.
	for k, w := range map[string]float64{
		"slurm_job_processes{state=sleeping}":                       1,
		"slurm_job_context_switches_total{type=voluntary}":          10,
		"slurm_job_process_storage_io_bytes_total{direction=read}":  4096,
		"slurm_job_open_fds{}":                                      2,
		"slurm_job_open_files{mount=/scratch}":                      1,
		"slurm_job_process_cpu_seconds_total{exe=/usr/bin/other}":   1,
		"slurm_job_process_storage_io_bytes_total{direction=write}": 8192,
	} {
		if v, ok := got200[k]; !ok || v != w {
			t.Errorf("job 200: %s = %v (present %v), want %v", k, v, ok, w)
		}
	}
	// Two scrapes: the cause counted in each, logged once.
	if n := problems.Count("process", "bad_procfs_file"); n != 2 {
		t.Errorf("bad_procfs_file counted %v times in two scrapes, want 2", n)
	}
	if n := problems.Count("process", "permission_denied"); n != 0 {
		t.Errorf("permission_denied counted %v times", n)
	}
	if n := strings.Count(logged.String(), "collector problem"); n != 1 {
		t.Errorf("%d log lines, want 1:\n%s", n, logged.String())
	}
	if !strings.Contains(logged.String(), errSymlink.Error()) {
		t.Errorf("the log does not say a symlink was refused:\n%s", logged.String())
	}
}

// The error of a refused symlink says so, and is not taken for an exited
// process.
func TestSymlinkErrorIsNotVanished(t *testing.T) {
	dir := t.TempDir()
	if err := os.Symlink("nowhere", filepath.Join(dir, "7")); err != nil {
		t.Fatal(err)
	}
	_, err := openPIDDir(dir, 7)
	if !errors.Is(err, errSymlink) || procVanished(err) {
		t.Fatalf("open of a dangling /proc/<pid> symlink: %v", err)
	}
	r := procReader{root: dir}
	var ri procReadIssues
	r.classify(&ri, 7, err)
	if ri.errs["bad_procfs_file"] == nil {
		t.Fatalf("a dangling /proc/<pid> symlink was taken for an exited process: %v", ri.errs)
	}
}

// TestFIFONotWaitedFor: a FIFO planted as /proc/<pid>/io, even one a
// writer holds open without writing, is that file's bad_procfs_file and
// the scrape returns, with the process's other files read.
func TestFIFONotWaitedFor(t *testing.T) {
	root := t.TempDir()
	proc := filepath.Join(root, "proc")
	writeProcFake(t, proc, procFakeProc{pid: 1000, comm: "fifo", state: "S", exe: "/usr/bin/fifo", utime: 100, start: 5000})
	io := filepath.Join(proc, "1000", "io")
	if err := os.Remove(io); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mkfifo(io, 0o644); err != nil {
		t.Fatal(err)
	}
	w, err := os.OpenFile(io, os.O_RDWR, 0) // a writer that never writes
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	writeProcFakeJob(t, filepath.Join(root, "cgroup"), filepath.Join(root, "props"), "100", "alice", "phys",
		map[string][]int{"step_0": {1000}})
	problems := collector.NewProblems(nil)
	c := newFixtureProcCollector(t, proc, Options{TopN: 5, IO: IOOn, Level: collector.LevelFull})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ch := make(chan prometheus.Metric, 1024)
	if err := c.Collect(collectortest.Scrape(ctx, "process", procFixtureJobs(t, root)(), problems), ch); err != nil {
		t.Fatalf("scrape: %v", err)
	}
	if n := problems.Count("process", "bad_procfs_file"); n != 1 {
		t.Errorf("bad_procfs_file counted %v times, want 1", n)
	}
	if got := procValues(t, c, procFixtureJobs(t, root), "100")["slurm_job_process_cpu_seconds_total{exe=/usr/bin/fifo}"]; got != 1 {
		t.Errorf("the process's CPU = %v, want 1: its other files were not read", got)
	}
}
