// SPDX-License-Identifier: Apache-2.0

package adversarial

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// fifo puts a FIFO at path: opening it blocks until a writer comes. The
// test's end lets a blocked reader go.
func fifo(t *testing.T, path string) {
	t.Helper()
	_ = os.Remove(path)
	if err := syscall.Mkfifo(path, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if fd, err := unix.Open(path, unix.O_WRONLY|unix.O_NONBLOCK, 0); err == nil {
			unix.Close(fd)
		}
	})
}

// Bad cgroupfs and procfs content, one kind per job of a 128-job node:
// garbage, negative, 2^64 and 2^64-1 values, a repeated key, a 100 MB file,
// a blocking cgroup file and a FIFO under procfs. Every scrape answers
// 200 without duplicate series, the cgroup and process collectors succeed,
// every job but the one whose cgroup file blocks is exported, no counter
// goes down, and the resident memory stays far below the 100 MB file.
func TestBadFiles(t *testing.T) {
	root, args := tree(t, 128)
	proc := t.TempDir()
	args = append(args, "--path.procfs="+proc) // the later flag wins
	write(t, filepath.Join(jobDir(root, 0), "memory.current"), "garbage\n")
	write(t, filepath.Join(jobDir(root, 1), "cpu.stat"), "usage_usec -5\nuser_usec -1\nsystem_usec x\n")
	write(t, filepath.Join(jobDir(root, 2), "memory.current"), "18446744073709551616\n")
	write(t, filepath.Join(jobDir(root, 3), "memory.stat"), "anon 100\nanon 200\nfile 5\nfile 6\n")
	write(t, filepath.Join(jobDir(root, 4), "memory.stat"), string(bytes.Repeat([]byte("anon 1\n"), 100<<20/7)))
	write(t, filepath.Join(jobDir(root, 6), "cpu.stat"), "usage_usec 18446744073709551615\n")
	fifo(t, filepath.Join(jobDir(root, 5), "io.stat"))
	// Processes of job 7: one with garbage in every file, one whose io blocks.
	task := filepath.Join(jobDir(root, 7), "step_0", "user", "task_0", "cgroup.procs")
	write(t, task, "4242\n4243\n")
	for _, f := range []string{"stat", "status", "io", "cmdline"} {
		write(t, filepath.Join(proc, "4242", f), "\x00\xff garbage -1 18446744073709551616\n")
	}
	write(t, filepath.Join(proc, "4243", "stat"), "4243 (sh) S 1 4243 4243 0 -1 4194560 1 0 0 0 5 6 0 0 20 0 1 0 100 1000 10 18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n")
	write(t, filepath.Join(proc, "4243", "status"), "Name:\tsh\nState:\tS (sleeping)\nThreads:\t1\nvoluntary_ctxt_switches:\t1\nnonvoluntary_ctxt_switches:\t1\n")
	fifo(t, filepath.Join(proc, "4243", "io"))
	n := start(t, nil, append(args, "--collector.process.io=on")...)
	var prev map[string]float64
	for i := range 3 {
		s, took := n.mustScrape(10 * time.Second)
		jobs := count(s, "slurm_job_info")
		report(t, "bad files: scrape %d took %v, %d of 128 jobs, RSS %d KiB", i, took.Round(time.Millisecond), jobs, rssKiB(t, n.cmd.Process.Pid))
		if jobs != 127 {
			t.Errorf("scrape %d: %d jobs exported, want 127 (all but the one whose io.stat blocks)", i, jobs)
		}
		for _, c := range []string{"cgroup", "process"} {
			if s[`jobscope_scrape_collector_success{collector="`+c+`"}`] != 1 {
				t.Errorf("scrape %d: %s collector failed", i, c)
			}
		}
		if prev != nil {
			noCounterDecrease(t, prev, s)
		}
		prev = s
	}
	if rss := rssKiB(t, n.cmd.Process.Pid); rss > 80<<10 {
		t.Errorf("RSS %d KiB after reading around a 100 MB file", rss)
	}
	// Each bad input is counted under its cause; the blocking io.stat costs
	// job 1005 its cgroup series. The process collector opens procfs files
	// without waiting (O_NONBLOCK), so the FIFO at /proc/4243/io holds no
	// worker: it is a bad procfs file, not a timeout.
	if prev[`jobscope_collector_errors_total{cause="job_timeout",collector="process"}`] != 0 {
		t.Error("a FIFO under procfs held a process collector worker until its job's share of the deadline")
	}
	for _, series := range []string{
		`jobscope_collector_errors_total{cause="job_timeout",collector="cgroup"}`,
		`jobscope_collector_errors_total{cause="bad_procfs_file",collector="process"}`,
		`jobscope_collector_errors_total{cause="malformed_file",collector="cgroup"}`,
		`jobscope_collector_errors_total{cause="read_failed",collector="cgroup"}`, // the 100 MB file
	} {
		if prev[series] == 0 {
			t.Errorf("no %s", series)
		}
	}
	for k := range prev {
		if strings.HasPrefix(k, "slurm_job_info{") && strings.Contains(k, `jobid="1005"`) {
			t.Error("job 1005, whose io.stat blocks, was exported")
		}
	}
}

// Jobs appear and vanish (directories removed mid-scrape) while Prometheus
// scrapes at 10 Hz. Scaled for CI: 300 jobs created and deleted, one every
// 50 ms, each living about a second (the figure is 1,000 jobs over
// 2 minutes). No scrape fails, none has a duplicate series, and the
// counters of the 16 jobs that stay never go down. The churn is counted in
// jobs, not seconds: on a loaded machine copying a job directory is slower,
// and a 20-second window once churned only 188.
func TestVanishingJobs(t *testing.T) {
	const jobs = 300
	root, args := tree(t, 16)
	spare, _ := tree(t, 1) // a job directory to copy
	n := start(t, nil, args...)
	done := make(chan struct{})
	made := 0
	go func() {
		defer close(done)
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for i := 0; made < jobs && i < 10*jobs; i++ {
			<-tick.C
			dst := jobDir(root, 100+i)
			if err := copyTree(jobDir(spare, 0), dst); err == nil {
				made++
			}
			if i >= 20 { // each job lives about a second
				_ = os.RemoveAll(jobDir(root, 100+i-20))
			}
		}
	}()
	var prev map[string]float64
	scrapes := 0
	// The bound only stops a churner that cannot copy at all.
	deadline := time.Now().Add(5 * time.Minute)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	churning := true
	for churning && time.Now().Before(deadline) {
		s, _ := n.mustScrape(2 * time.Second)
		if prev != nil {
			noCounterDecrease(t, prev, s)
		}
		prev = s
		scrapes++
		select {
		case <-done:
			churning = false
		case <-tick.C:
		}
	}
	if churning {
		t.Fatalf("the churner did not make %d jobs in 5 minutes", jobs)
	}
	report(t, "vanishing jobs: %d scrapes at 10 Hz, %d jobs created and deleted, no failure", scrapes, made)
	if made < jobs || scrapes < 100 {
		t.Errorf("%d jobs churned under %d scrapes, want %d under at least 100", made, scrapes, jobs)
	}
}

// copyTree copies a job directory (files and directories) to dst, then
// renames it into place so that it appears at once.
func copyTree(src, dst string) error {
	tmp := dst + ".tmp"
	err := filepath.Walk(src, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		out := filepath.Join(tmp, rel)
		if fi.IsDir() {
			return os.MkdirAll(out, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(out, b, 0o644)
	})
	if err != nil {
		return err
	}
	return os.Rename(tmp, dst)
}
