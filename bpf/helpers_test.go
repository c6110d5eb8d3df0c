// SPDX-License-Identifier: Apache-2.0

//go:build linux

package bpf

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The privileged tests run their workloads in child processes (this test
// binary again, with JOBSCOPE_BPF_HELPER set) so that each can be put into a
// job cgroup while it waits on stdin, before it does anything to count.
func TestMain(m *testing.M) {
	if h := os.Getenv("JOBSCOPE_BPF_HELPER"); h != "" {
		os.Exit(runHelper(h))
	}
	os.Exit(m.Run())
}

// runHelper prints "ready", waits for one line on stdin (an argument), then
// does its work. It prints nothing after the go line unless the parent needs
// a value, so that the counted IO is the work alone.
func runHelper(kind string) int {
	fmt.Println("ready")
	stdin := bufio.NewReader(os.Stdin)
	arg, err := stdin.ReadString('\n')
	if err != nil {
		return 2
	}
	arg = strings.TrimSpace(arg)
	size, _ := strconv.Atoi(os.Getenv("JS_BYTES"))
	switch kind {
	case "burn":
		d, _ := time.ParseDuration(arg)
		end := time.Now().Add(d)
		x := 1
		for time.Now().Before(end) {
			for i := 0; i < 10000; i++ {
				x = x*31 + i
			}
		}
		if x == 42 {
			fmt.Println(x)
		}
	case "spin":
		// Burns CPU until the next line on stdin: the test counts the CPU
		// time it got in cpu.stat, not wall time (a loaded machine gives
		// it less).
		var stop atomic.Bool
		go func() {
			stdin.ReadString('\n')
			stop.Store(true)
		}()
		x := 1
		for !stop.Load() {
			for i := 0; i < 10000; i++ {
				x = x*31 + i
			}
		}
		if x == 42 {
			fmt.Println(x)
		}
	case "fork":
		// Starts a helper of kind arg that shares this one's stdin and
		// stdout, and waits for it: a process forked inside the job at the
		// moment the test chooses, as a batch script starts its steps.
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), "JOBSCOPE_BPF_HELPER="+arg)
		cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := cmd.Run(); err != nil {
			return 3
		}
	case "write":
		f, err := os.Create(arg)
		if err != nil {
			return 3
		}
		buf := make([]byte, 1<<20)
		for done := 0; done < size; done += len(buf) {
			if _, err := f.Write(buf); err != nil {
				return 4
			}
		}
		if err := f.Sync(); err != nil {
			return 5
		}
		// Drop the pages so the reader's bytes come from storage.
		unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED)
		f.Close()
	case "read":
		f, err := os.Open(arg)
		if err != nil {
			return 3
		}
		buf := make([]byte, 1<<20)
		for {
			_, err := f.Read(buf)
			if err == io.EOF {
				break
			}
			if err != nil {
				return 4
			}
		}
		f.Close()
	case "serve":
		var lc net.ListenConfig
		lc.SetMultipathTCP(os.Getenv("JS_MPTCP") == "1")
		ln, err := lc.Listen(context.Background(), "tcp", "127.0.0.1:0")
		if err != nil {
			return 3
		}
		fmt.Println(ln.Addr().(*net.TCPAddr).Port)
		ln.(*net.TCPListener).SetDeadline(time.Now().Add(30 * time.Second))
		c, err := ln.Accept()
		if err != nil {
			return 4
		}
		c.SetDeadline(time.Now().Add(30 * time.Second))
		if _, err := io.Copy(io.Discard, c); err != nil {
			return 5
		}
		c.Close()
		ln.Close()
	case "load":
		// The service user's view of the pins (pins_test.go).
		o, err := Load(Config{PinPath: arg, MaxJobs: 256, V2JobLevel: 3})
		if err != nil {
			fmt.Println(err)
			return 0
		}
		o.Close()
		fmt.Println("loaded")
	case "send":
		d := net.Dialer{Timeout: 5 * time.Second}
		d.SetMultipathTCP(os.Getenv("JS_MPTCP") == "1")
		c, err := d.Dial("tcp", "127.0.0.1:"+arg)
		if err != nil {
			return 3
		}
		c.SetDeadline(time.Now().Add(30 * time.Second))
		buf := make([]byte, 1<<20)
		for done := 0; done < size; done += len(buf) {
			if _, err := c.Write(buf); err != nil {
				return 4
			}
		}
		c.Close()
	default:
		return 1
	}
	return 0
}

// helper is a running child process waiting for its go line.
type helper struct {
	t    testing.TB
	cmd  *exec.Cmd
	in   io.WriteCloser
	out  *bufio.Reader
	kind string
}

// startHelper starts a helper pinned to cpu (every thread: the affinity of
// the forking thread is inherited) and waits for it to be ready.
func startHelper(t testing.TB, kind string, cpu int, env ...string) *helper {
	t.Helper()
	return startHelperIn(t, nil, kind, cpu, env...)
}

// startHelperIn is startHelper with the helper born in the network
// namespace ns (nil: the test's own).
func startHelperIn(t testing.TB, ns *netNS, kind string, cpu int, env ...string) *helper {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), append(env, "JOBSCOPE_BPF_HELPER="+kind)...)
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	outPipe, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	// Runs on a locked thread: the child inherits its affinity and namespace.
	start := func() error {
		var old, set unix.CPUSet
		if err := unix.SchedGetaffinity(0, &old); err != nil {
			return err
		}
		set.Set(cpu)
		if err := unix.SchedSetaffinity(0, &set); err != nil {
			return err
		}
		err := cmd.Start()
		unix.SchedSetaffinity(0, &old)
		return err
	}
	if ns != nil {
		err = ns.in(start)
	} else {
		runtime.LockOSThread()
		err = start()
		runtime.UnlockOSThread()
	}
	if err != nil {
		t.Fatalf("starting %s helper: %v", kind, err)
	}
	h := &helper{t: t, cmd: cmd, in: in, out: bufio.NewReader(outPipe), kind: kind}
	t.Cleanup(func() {
		if h.cmd.ProcessState == nil {
			h.cmd.Process.Kill()
		}
	})
	if line := h.line(); line != "ready" {
		t.Fatalf("%s helper said %q, want ready", kind, line)
	}
	// Let it block in its read, so its last slice before the move is closed.
	time.Sleep(50 * time.Millisecond)
	return h
}

func (h *helper) line() string {
	h.t.Helper()
	type res struct {
		s   string
		err error
	}
	rc := make(chan res, 1)
	go func() {
		s, err := h.out.ReadString('\n')
		rc <- res{strings.TrimSpace(s), err}
	}()
	select {
	case r := <-rc:
		if r.err != nil {
			h.t.Fatalf("%s helper output: %v", h.kind, r.err)
		}
		return r.s
	case <-time.After(30 * time.Second):
		h.t.Fatalf("%s helper: no output in 30s", h.kind)
	}
	return ""
}

func (h *helper) pid() int { return h.cmd.Process.Pid }

func (h *helper) start(arg string) {
	h.t.Helper()
	if _, err := io.WriteString(h.in, arg+"\n"); err != nil {
		h.t.Fatalf("%s helper: %v", h.kind, err)
	}
}

func (h *helper) wait() {
	h.t.Helper()
	io.Copy(io.Discard, h.out)
	if err := h.cmd.Wait(); err != nil {
		h.t.Fatalf("%s helper: %v", h.kind, err)
	}
}

// testJob is a job-shaped cgroup made for a test; remove deletes what the
// test created, deepest first.
type testJob struct {
	t       testing.TB
	id      string
	name    string            // of the job directory
	jobDir  map[string]string // controller ("" for v2) -> job directory
	taskDir map[string]string
	created []string
}

func randomJobID(t testing.TB) string {
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	// Big ids, far from any real job on the machine.
	return strconv.FormatUint(uint64(4_000_000_000)+uint64(binary.LittleEndian.Uint32(b[:])%100_000_000), 10)
}

func (j *testJob) mkdirs(base string, parts ...string) string {
	j.t.Helper()
	p := base
	for _, part := range parts {
		p = filepath.Join(p, part)
		err := os.Mkdir(p, 0o755)
		switch {
		case err == nil:
			j.created = append(j.created, p)
		case errors.Is(err, os.ErrExist):
		default:
			j.t.Fatalf("mkdir %s: %v", p, err)
		}
	}
	return p
}

// newV2Job makes system.slice/slurmstepd.scope/job_<id>/step_0/user/task_0.
func newV2Job(t testing.TB, root string) *testJob {
	return newV2JobNamed(t, root, "")
}

// newV2JobNamed is newV2Job with the job directory named name ("" for
// job_<id>), under <node>_slurmstepd.scope as Debian's Slurm names it.
func newV2JobNamed(t testing.TB, root, name string) *testJob {
	j := &testJob{t: t, id: randomJobID(t), jobDir: map[string]string{}, taskDir: map[string]string{}}
	scope := "slurmstepd.scope"
	if name == "" {
		name = "job_" + j.id
	} else {
		scope = "jstest_slurmstepd.scope"
	}
	j.name = name
	t.Cleanup(j.remove)
	j.mkdirs(root, "system.slice", scope)
	j.jobDir[""] = j.mkdirs(filepath.Join(root, "system.slice", scope), name)
	j.taskDir[""] = j.mkdirs(j.jobDir[""], "step_0", "user", "task_0")
	return j
}

// newV1Job makes slurm_jstest/uid_0/job_<id>/step_0/task_0 in each
// controller's hierarchy.
func newV1Job(t testing.TB, mounts map[string]string) *testJob {
	j := &testJob{t: t, id: randomJobID(t), jobDir: map[string]string{}, taskDir: map[string]string{}}
	j.name = "job_" + j.id
	t.Cleanup(j.remove)
	for ctrl, mnt := range mounts {
		j.jobDir[ctrl] = j.mkdirs(mnt, "slurm_jstest", "uid_0", j.name)
		j.taskDir[ctrl] = j.mkdirs(j.jobDir[ctrl], "step_0", "task_0")
	}
	return j
}

// enter moves a helper (all its threads) into the job's task cgroups.
func (j *testJob) enter(h *helper) {
	j.t.Helper()
	for _, d := range j.taskDir {
		if err := os.WriteFile(filepath.Join(d, "cgroup.procs"), []byte(strconv.Itoa(h.pid())), 0); err != nil {
			j.t.Fatalf("moving pid %d to %s: %v", h.pid(), d, err)
		}
	}
}

func (j *testJob) remove() {
	var left []string
	for i := len(j.created) - 1; i >= 0; i-- {
		dir := j.created[i]
		own := strings.Contains(dir, "/"+j.name)
		var err error
		for try := 0; try < 50; try++ {
			if err = os.Remove(dir); err == nil || errors.Is(err, os.ErrNotExist) || !own {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			if own {
				j.t.Errorf("cleanup: %v", err)
			}
			// A shared parent (system.slice, slurm_jstest) still holds
			// another test job: the later cleanup of this job retries.
			left = append([]string{dir}, left...)
		}
	}
	j.created = left
}

// pinProcess keeps every thread of the test process on cpu until the test
// ends (threads made later inherit it), so that the test's own work never
// preempts a helper pinned to another CPU.
func pinProcess(t testing.TB, cpu int) {
	t.Helper()
	var old, set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &old); err != nil {
		t.Fatal(err)
	}
	set.Set(cpu)
	each := func(mask *unix.CPUSet) {
		tids, err := os.ReadDir("/proc/self/task")
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range tids {
			tid, err := strconv.Atoi(d.Name())
			if err != nil {
				continue
			}
			// A thread may have exited since the listing.
			unix.SchedSetaffinity(tid, mask)
		}
	}
	each(&set)
	t.Cleanup(func() { each(&old) })
}
