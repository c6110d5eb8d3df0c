// SPDX-License-Identifier: Apache-2.0

package process

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/jobscope/jobscope/collector"
	"github.com/jobscope/jobscope/collector/collectortest"
	"github.com/jobscope/jobscope/discovery"
	"github.com/jobscope/jobscope/internal/testutil"
)

// writeProcBenchTree generates a node with n jobs of 6 processes each
// (extern sleep, batch shell, srun with 4 threads, three 4-thread ranks
// with a dozen fds, some on /scratch): 6 processes and 18 threads per job.
func writeProcBenchTree(b *testing.B, root string, n int) {
	proc := filepath.Join(root, "proc")
	for j := 0; j < n; j++ {
		base := 10000 + j*100
		id := strconv.Itoa(1000 + j)
		threads := func(pid int, k int) []procFakeThread {
			var ts []procFakeThread
			for i := 0; i < k; i++ {
				st := "S"
				if i == 0 {
					st = "R"
				}
				ts = append(ts, procFakeThread{tid: pid + i*10, state: st, start: uint64(pid), vol: uint64(100 * i), invol: 7, rchar: 1 << 20, wchar: 1 << 12, rbytes: 4096, wbytes: 4096})
			}
			return ts
		}
		fds := []string{"/dev/null", "/dev/pts/0", "/dev/pts/0", "socket:[1]", "pipe:[2]", "anon_inode:[eventfd]",
			"/scratch/u/job" + id + "/out", "/scratch/u/in", "/home/u/cfg", "/usr/lib/libx.so", "/tmp/x", "/scratch/u/log"}
		procs := []procFakeProc{
			{pid: base, comm: "sleep", state: "S", exe: "/usr/bin/sleep", start: 1, fds: fds[:3]},
			{pid: base + 1, comm: "slurm_script", state: "S", exe: "/usr/bin/bash", utime: 3, start: 2, fds: fds[:4]},
			{pid: base + 2, comm: "srun", state: "S", exe: "/usr/bin/srun", utime: 40, start: 3, threads: threads(base+2, 4), fds: fds[:6]},
		}
		var ranks []int
		for r := 0; r < 3; r++ {
			pid := base + 3 + r
			ranks = append(ranks, pid)
			procs = append(procs, procFakeProc{pid: pid, comm: "app", state: "R", exe: "/opt/app/bin/app", utime: 100000, stime: 20, start: 4, threads: threads(pid, 4), fds: fds})
		}
		for _, p := range procs {
			writeProcFake(b, proc, p)
		}
		writeProcFakeJob(b, filepath.Join(root, "cgroup"), filepath.Join(root, "props"), id, "u"+strconv.Itoa(j%10), "acct", map[string][]int{
			"step_extern": {base},
			"step_batch":  {base + 1, base + 2},
			"step_0":      ranks,
		})
	}
}

// BenchmarkProcessScrape measures one collection over 128 jobs of 6
// processes (18 threads) each, with discovery done beforehand (it is the
// framework's cost, shared by every collector).
func BenchmarkProcessScrape(b *testing.B) {
	const jobs = 128
	root := b.TempDir()
	writeProcBenchTree(b, root, jobs)
	d := discovery.New(discovery.Config{
		Layout: discovery.Layout{V2: filepath.Join(root, "cgroup")}, ProcFS: filepath.Join(root, "proc"),
		PropsDir: filepath.Join(root, "props"), LookupUser: func(int) (string, error) { return "", fmt.Errorf("none") },
	})
	list := d.Discover(context.Background(), func(string, error) {})
	if len(list) != jobs {
		b.Fatalf("discovered %d jobs", len(list))
	}
	for _, j := range list {
		j.PIDs()
	}
	benchProcOptions(b, filepath.Join(root, "proc"), list, "/scratch")
}

// benchProcOptions runs one collection per iteration with each set of
// options: what each flag costs.
func benchProcOptions(b *testing.B, procRoot string, list []*discovery.Job, mount string) {
	for _, bc := range []struct {
		name string
		opts Options
	}{
		{"process-files", Options{TopN: 5, IO: IOOff}},
		{"defaults", Options{TopN: 5, IO: IOOn}}, // IO on as when no ebpf collector runs
		{"defaults+fs", Options{TopN: 5, IO: IOOn, Mounts: []string{mount, "/home"}}},
		{"threads", Options{TopN: 5, IO: IOOn, Threads: true}},
		{"threads+fs", Options{TopN: 5, IO: IOOn, Threads: true, Mounts: []string{mount, "/home"}}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			c := newFixtureProcCollector(b, procRoot, bc.opts)
			ch := make(chan prometheus.Metric, 8192)
			jobsFn := func() []*discovery.Job { return list }
			b.ReportAllocs()
			b.ResetTimer()
			cpu0 := testutil.CPUTime()
			for i := 0; i < b.N; i++ {
				if err := c.Collect(collectortest.Scrape(context.Background(), "process", jobsFn(), collector.NewProblems(nil)), ch); err != nil {
					b.Fatal(err)
				}
				for len(ch) > 0 {
					<-ch
				}
			}
			// CPU time (user+system) is what the node pays; on a busy
			// machine it is also steadier than wall time.
			b.ReportMetric(float64(testutil.CPUTime()-cpu0)/float64(b.N), "cpu-ns/op")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(list)), "ns/job")
		})
	}
}

// BenchmarkProcessScrapeRealProc reads the real /proc: 128 jobs of 6 live
// processes each (two single-threaded sleeps and four 4-thread programs
// holding 8 files open on /dev/shm, when a C compiler is there to build
// them; sleeps otherwise), so kernel-side costs are the real ones.
func BenchmarkProcessScrapeRealProc(b *testing.B) {
	const jobs = 128
	if _, err := os.Stat("/proc/self/task"); err != nil {
		b.Skip("no procfs")
	}
	root := b.TempDir()
	prog := []string{"sleep", "3600"}
	if cc, err := exec.LookPath("cc"); err == nil {
		src := filepath.Join(root, "t.c")
		bin := filepath.Join(root, "t")
		if err := os.WriteFile(src, []byte(procBenchThreadsC), 0o644); err != nil {
			b.Fatal(err)
		}
		if out, err := exec.Command(cc, "-pthread", "-o", bin, src).CombinedOutput(); err == nil {
			shm, err := os.MkdirTemp("/dev/shm", "jobscope-bench")
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { os.RemoveAll(shm) })
			prog = []string{bin}
			for i := 0; i < 8; i++ {
				p := filepath.Join(shm, strconv.Itoa(i))
				if err := os.WriteFile(p, nil, 0o644); err != nil {
					b.Fatal(err)
				}
				prog = append(prog, p)
			}
		} else {
			b.Logf("cc failed, single-threaded programs only: %v %s", err, out)
		}
	}
	var cmds []*exec.Cmd
	b.Cleanup(func() {
		for _, c := range cmds {
			_ = c.Process.Kill()
			_ = c.Wait()
		}
	})
	start := func(args ...string) int {
		c := exec.Command(args[0], args[1:]...)
		if err := c.Start(); err != nil {
			b.Fatal(err)
		}
		cmds = append(cmds, c)
		return c.Process.Pid
	}
	cg := filepath.Join(root, "cgroup")
	for j := 0; j < jobs; j++ {
		steps := map[string][]int{"step_extern": {start("sleep", "3600")}, "step_batch": {start("sleep", "3600")}}
		for r := 0; r < 4; r++ {
			steps["step_0"] = append(steps["step_0"], start(prog...))
		}
		writeProcFakeJob(b, cg, filepath.Join(root, "props"), strconv.Itoa(1000+j), "u", "acct", steps)
	}
	time.Sleep(200 * time.Millisecond) // let the programs start their threads
	d := discovery.New(discovery.Config{
		Layout: discovery.Layout{V2: cg}, ProcFS: "/proc", PropsDir: filepath.Join(root, "props"),
		LookupUser: func(int) (string, error) { return "", fmt.Errorf("none") },
	})
	list := d.Discover(context.Background(), func(string, error) {})
	for _, j := range list {
		j.PIDs()
	}
	benchProcOptions(b, "/proc", list, "/dev/shm")
}

const procBenchThreadsC = `#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>
static void *idle(void *a) { (void)a; for (;;) pause(); return 0; }
int main(int argc, char **argv) {
	pthread_t t;
	for (int i = 1; i < argc; i++) open(argv[i], O_RDONLY);
	for (int i = 0; i < 3; i++) pthread_create(&t, 0, idle, 0);
	for (;;) pause();
}
`
