// SPDX-License-Identifier: Apache-2.0

package process

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jobscope/jobscope/collector"
	"github.com/jobscope/jobscope/discovery"
)

// The privileged test builds a job-shaped cgroup on the hybrid host's v2
// hierarchy, runs real processes in it and reads them through the real
// discovery and the real /proc.
const procTestV2 = "/sys/fs/cgroup/unified"

// procZombieLeaderC exits its main thread while three threads live on: the
// process stays listed in cgroup.procs with its leader a zombie. (A plain
// zombie process is not listed in a v2 cgroup.procs at all.)
const procZombieLeaderC = `#include <pthread.h>
#include <unistd.h>
static void *idle(void *a) { (void)a; for (;;) pause(); return 0; }
int main(void) {
	pthread_t t;
	for (int i = 0; i < 3; i++) pthread_create(&t, 0, idle, 0);
	pthread_exit(0);
}
`

// TestProcessHelperProcess is the job's main process when the privileged
// test runs this binary with JOBSCOPE_PROC_HELPER set; otherwise it does
// nothing.
func TestProcessHelperProcess(t *testing.T) {
	cg := os.Getenv("JOBSCOPE_PROC_HELPER")
	if cg == "" {
		return
	}
	fail := func(err error) {
		fmt.Fprintln(os.Stderr, "helper:", err)
		os.Exit(2)
	}
	if err := os.WriteFile(filepath.Join(cg, "cgroup.procs"), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		fail(err)
	}
	// Use some CPU (a few ticks of /proc/<pid>/stat) so the executable
	// makes the top N; bounded in wall time on a busy machine.
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); {
		var ru syscall.Rusage
		_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		if time.Duration(ru.Utime.Nano()+ru.Stime.Nano()) >= 50*time.Millisecond {
			break
		}
	}
	var files []*os.File
	for i := 0; i < 3; i++ {
		f, err := os.Create(filepath.Join(os.Getenv("JOBSCOPE_PROC_MNT"), fmt.Sprintf("f%d", i)))
		if err != nil {
			fail(err)
		}
		files = append(files, f)
	}
	stopped := exec.Command("sleep", "600")
	if err := stopped.Start(); err != nil {
		fail(err)
	}
	_ = stopped.Process.Signal(syscall.SIGSTOP)
	zombie := exec.Command("true")
	if err := zombie.Start(); err != nil {
		fail(err)
	}
	var zl *exec.Cmd
	zlPID := 0
	if bin := os.Getenv("JOBSCOPE_PROC_ZLEADER"); bin != "" {
		zl = exec.Command(bin)
		if err := zl.Start(); err != nil {
			fail(err)
		}
		zlPID = zl.Process.Pid
	}
	fmt.Printf("ready %d %d %d\n", stopped.Process.Pid, zombie.Process.Pid, zlPID)
	_, _ = io.Copy(io.Discard, os.Stdin) // until the test closes stdin
	_ = stopped.Process.Kill()
	_ = stopped.Wait()
	_ = zombie.Wait()
	if zl != nil {
		_ = zl.Process.Kill()
		_ = zl.Wait()
	}
	for _, f := range files {
		f.Close()
	}
	os.Exit(0)
}

func TestProcessPrivileged(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: creates a cgroup and mounts a tmpfs")
	}
	if _, err := os.Stat(filepath.Join(procTestV2, "cgroup.procs")); err != nil {
		t.Skipf("needs a cgroup v2 hierarchy at %s (hybrid host): %v", procTestV2, err)
	}
	id := strconv.FormatInt(7_000_000_000+rand.Int63n(1_000_000_000), 10)
	scope := filepath.Join(procTestV2, "system.slice", "slurmstepd.scope")
	job := filepath.Join(scope, "job_"+id)
	step := filepath.Join(job, "step_0")
	// Remove what this test created, deepest first; shared parents only if
	// empty (rmdir refuses otherwise, which is what we want).
	var made []string
	for _, d := range []string{filepath.Dir(scope), scope, job, step} {
		if err := os.Mkdir(d, 0o755); err == nil {
			made = append(made, d)
		} else if !errors.Is(err, os.ErrExist) {
			t.Fatalf("mkdir %s: %v", d, err)
		}
	}
	t.Cleanup(func() {
		for i := len(made) - 1; i >= 0; i-- {
			var err error
			for try := 0; try < 50; try++ {
				// EBUSY while the kernel still releases the exited tasks;
				// ENOTEMPTY on a shared parent that another job uses now.
				if err = os.Remove(made[i]); err == nil || !errors.Is(err, syscall.EBUSY) {
					break
				}
				time.Sleep(100 * time.Millisecond)
			}
			if err != nil && !errors.Is(err, syscall.ENOTEMPTY) {
				t.Errorf("cleanup: %v", err)
			}
		}
	})

	mnt := filepath.Join(t.TempDir(), "scratch")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", mnt, "tmpfs", 0, "size=4m"); err != nil {
		t.Skipf("cannot mount a tmpfs: %v", err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(mnt, syscall.MNT_DETACH) })

	zleader := ""
	if cc, err := exec.LookPath("cc"); err == nil {
		src := filepath.Join(t.TempDir(), "zl.c")
		bin := filepath.Join(filepath.Dir(src), "zl")
		if err := os.WriteFile(src, []byte(procZombieLeaderC), 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command(cc, "-pthread", "-o", bin, src).CombinedOutput(); err != nil {
			t.Logf("no zombie-leader process (cc failed: %v: %s)", err, out)
		} else {
			zleader = bin
		}
	} else {
		t.Log("no C compiler: the zombie-leader process is left out")
	}

	helper := exec.Command(os.Args[0], "-test.run=^TestProcessHelperProcess$")
	helper.Env = append(os.Environ(), "JOBSCOPE_PROC_HELPER="+step, "JOBSCOPE_PROC_MNT="+mnt, "JOBSCOPE_PROC_ZLEADER="+zleader,
		"SLURM_JOB_ID="+id, "SLURM_JOB_USER=tester", "SLURM_JOB_ACCOUNT=testacct")
	helper.Stderr = os.Stderr
	stdin, err := helper.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := helper.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := helper.Start(); err != nil {
		t.Fatal(err)
	}
	var childPIDs [3]int
	t.Cleanup(func() {
		stdin.Close()
		done := make(chan struct{})
		go func() { _ = helper.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			for _, p := range childPIDs {
				if p > 0 {
					_ = syscall.Kill(p, syscall.SIGKILL)
				}
			}
			_ = helper.Process.Kill()
			<-done
		}
	})
	ready := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(stdout).ReadString('\n')
		ready <- line
	}()
	select {
	case line := <-ready:
		if _, err := fmt.Sscanf(line, "ready %d %d %d", &childPIDs[0], &childPIDs[1], &childPIDs[2]); err != nil {
			t.Fatalf("helper said %q: %v", line, err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("helper did not get ready")
	}
	stoppedPID, zombiePID, zlPID := childPIDs[0], childPIDs[1], childPIDs[2]
	procWaitState(t, stoppedPID, "T")
	procWaitState(t, zombiePID, "Z")
	if zlPID > 0 {
		procWaitState(t, zlPID, "Z")
	}

	disc := discovery.New(discovery.Config{Layout: discovery.Layout{V2: procTestV2}, ProcFS: "/proc",
		LookupUser: func(int) (string, error) { return "", errors.New("no lookup") }})
	jobs := func() []*discovery.Job {
		for _, j := range disc.Discover(context.Background(), func(string, error) {}) {
			if j.ID == id {
				return []*discovery.Job{j}
			}
		}
		t.Fatalf("discovery did not find job %s", id)
		return nil
	}
	c, err := New(&collector.Env{ProcFS: "/proc"},
		Options{Mounts: []string{mnt}, TopN: 5, Threads: true, IO: IOOn, Level: collector.LevelFull})
	if err != nil {
		t.Fatal(err)
	}

	wantProcs := 2 // the helper and the stopped sleep; the zombie is not in cgroup.procs
	if zlPID > 0 {
		wantProcs = 3
	}
	pids := jobs()[0].PIDs()
	if len(pids) != wantProcs {
		t.Fatalf("cgroup.procs lists %v, want %d processes (helper %d, stopped %d, zombie %d, zombie leader %d)",
			pids, wantProcs, helper.Process.Pid, stoppedPID, zombiePID, zlPID)
	}
	for _, p := range pids {
		if p == zombiePID {
			t.Errorf("zombie %d listed in cgroup.procs", p)
		}
	}

	// The helper's Go runtime may start a thread at any time: compare with
	// the task directories read right before and after, retrying a little.
	var got map[string]float64
	var wantThreads int
	for try := 0; ; try++ {
		before := procCountTasks(pids)
		got = procValues(t, c, jobs, id)
		wantThreads = procCountTasks(pids)
		if before == wantThreads || try == 5 {
			break
		}
	}
	var threads, procs float64
	for _, s := range procStates {
		threads += got["slurm_job_threads{state="+s+"}"]
		procs += got["slurm_job_processes{state="+s+"}"]
	}
	checks := []struct {
		what      string
		got, want float64
		atLeast   bool
	}{
		{"processes", procs, float64(wantProcs), false},
		{"stopped processes", got["slurm_job_processes{state=stopped}"], 1, false},
		{"threads", threads, float64(wantThreads), false},
		{"stopped threads", got["slurm_job_threads{state=stopped}"], 1, false},
		{"open files on the tmpfs", got["slurm_job_open_files{mount="+mnt+"}"], 3, false},
		{"open fds", got["slurm_job_open_fds{}"], 3, true},
		{"voluntary context switches", got["slurm_job_context_switches_total{type=voluntary}"], 1, true},
		{"syscall write bytes", got["slurm_job_process_syscall_io_bytes_total{direction=write}"], 1, true},
	}
	if zlPID > 0 {
		checks = append(checks,
			struct {
				what      string
				got, want float64
				atLeast   bool
			}{"zombie threads (the zombie leader)", got["slurm_job_threads{state=zombie}"], 1, false},
			struct {
				what      string
				got, want float64
				atLeast   bool
			}{"zombie processes (the zombie leader)", got["slurm_job_processes{state=zombie}"], 1, false},
			struct {
				what      string
				got, want float64
				atLeast   bool
			}{"sleeping threads", got["slurm_job_threads{state=sleeping}"], 3, true})
	}
	for _, ck := range checks {
		if (ck.atLeast && ck.got < ck.want) || (!ck.atLeast && ck.got != ck.want) {
			t.Errorf("%s: got %v, want %v (all: %v)", ck.what, ck.got, ck.want, got)
		}
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := got["slurm_job_process_cpu_seconds_total{exe="+self+"}"]; !ok {
		t.Errorf("no CPU series for the helper's executable %s: %v", self, got)
	}
}

func procWaitState(t *testing.T, pid int, state string) {
	t.Helper()
	for try := 0; try < 100; try++ {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err == nil {
			s := string(b)
			if f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:]); len(f) > 0 && f[0] == state {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("pid %d never reached state %s", pid, state)
}

func procCountTasks(pids []int) int {
	n := 0
	for _, p := range pids {
		es, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", p))
		n += len(es)
	}
	return n
}
