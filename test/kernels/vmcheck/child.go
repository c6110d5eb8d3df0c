// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// child runs one role in a job cgroup:
//   - burn: one thread spins alone on JSX_CPU for JSX_FOR (the process is
//     started with asynchronous preemption off, so the Go runtime never
//     switches it out, and its other threads stay on the parent's CPU);
//   - io: writes JSX_BYTES to JSX_FILE, then sends as many to JSX_ADDR;
//   - wait: blocks until stdin closes (a live process for procfs readers).
func child(role string) int {
	size, _ := strconv.Atoi(os.Getenv("JSX_BYTES"))
	switch role {
	case "burn":
		d, _ := time.ParseDuration(os.Getenv("JSX_FOR"))
		cpu, _ := strconv.Atoi(os.Getenv("JSX_CPU"))
		runtime.LockOSThread()
		var set unix.CPUSet
		set.Set(cpu)
		if err := unix.SchedSetaffinity(0, &set); err != nil {
			return 2
		}
		end := time.Now().Add(d)
		x := 1
		for time.Now().Before(end) {
			for i := 0; i < 1<<20; i++ {
				x = x*31 + i
			}
		}
		if x == 42 {
			fmt.Println(x)
		}
	case "io":
		buf := make([]byte, 1<<20)
		f, err := os.Create(os.Getenv("JSX_FILE"))
		if err != nil {
			return 3
		}
		for done := 0; done < size; done += len(buf) {
			if _, err := f.Write(buf); err != nil {
				return 4
			}
		}
		f.Close()
		c, err := net.Dial("tcp", os.Getenv("JSX_ADDR"))
		if err != nil {
			return 5
		}
		for done := 0; done < size; done += len(buf) {
			if _, err := c.Write(buf); err != nil {
				return 6
			}
		}
		c.Close()
	case "wait":
		b := make([]byte, 1)
		_, _ = os.Stdin.Read(b) // EOF or a byte: either ends the wait
	default:
		return 1
	}
	return 0
}

// startIn starts a child role directly in the cgroup dir (clone3 into the
// cgroup, so nothing it does is counted outside the job).
func startIn(dir, role string, stdin io.Reader, env ...string) (*exec.Cmd, error) {
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	cmd := exec.Command("/proc/self/exe")
	cmd.Env = append(os.Environ(), append(env, roleEnv+"="+role, "GODEBUG=asyncpreemptoff=1")...)
	cmd.Stderr = os.Stderr
	cmd.Stdin = stdin
	cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: fd, Pdeathsig: syscall.SIGKILL}
	return cmd, cmd.Start()
}
