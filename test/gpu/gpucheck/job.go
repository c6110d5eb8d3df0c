// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// cgroupLayout says where a job-shaped cgroup goes on this machine.
type cgroupLayout struct {
	V2 string            // cgroup2 mount, "" when none
	V1 map[string]string // v1 controller -> mount
}

func detectCgroups() cgroupLayout {
	l := cgroupLayout{V1: map[string]string{}}
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return l
	}
	for _, line := range strings.Split(string(b), "\n") {
		pre, post, ok := strings.Cut(line, " - ")
		if !ok {
			continue
		}
		pf, qf := strings.Fields(pre), strings.Fields(post)
		if len(pf) < 5 || len(qf) < 3 {
			continue
		}
		switch qf[0] {
		case "cgroup2":
			if l.V2 == "" || pf[4] == "/sys/fs/cgroup" {
				l.V2 = pf[4]
			}
		case "cgroup":
			for _, o := range strings.Split(qf[2], ",") {
				if o == "memory" || o == "cpuacct" || o == "devices" {
					l.V1[o] = pf[4]
				}
			}
		}
	}
	return l
}

// useV2 says whether Slurm's cgroup/v2 layout can be used: a pure v2 host,
// or a hybrid one whose v1 hierarchies lack memory (jobscope reads v1 first).
func (l cgroupLayout) useV2() bool { return l.V2 != "" && l.V1["memory"] == "" }

// jobDirs returns the task directories of job id (one per hierarchy) and the
// directories to remove afterwards, deepest first.
func (l cgroupLayout) jobDirs(id string) (tasks, all []string) {
	if l.useV2() {
		job := filepath.Join(l.V2, "system.slice/slurmstepd.scope/job_"+id)
		task := filepath.Join(job, "step_0/user/task_0")
		return []string{task}, []string{task, filepath.Dir(task), filepath.Dir(filepath.Dir(task)), job}
	}
	for _, mnt := range l.V1 {
		job := filepath.Join(mnt, "slurm/uid_0/job_"+id)
		task := filepath.Join(job, "step_0/task_0")
		tasks = append(tasks, task)
		all = append(all, task, filepath.Dir(task), job)
	}
	return tasks, all
}

// loadProc is one gpuload process inside a job-shaped cgroup.
type loadProc struct {
	id    string
	cmd   *exec.Cmd
	in    io.WriteCloser
	dirs  []string
	mu    sync.Mutex
	lines []string
	seen  chan string
}

func startLoad(l cgroupLayout, bin, id string, env []string, logw io.Writer) (*loadProc, error) {
	tasks, all := l.jobDirs(id)
	for _, t := range tasks {
		if err := os.MkdirAll(t, 0o755); err != nil {
			return nil, fmt.Errorf("cgroup %s: %w", t, err)
		}
	}
	p := &loadProc{id: id, dirs: all, seen: make(chan string, 64)}
	p.cmd = exec.Command(bin)
	p.cmd.Env = env
	p.cmd.Stderr = logw
	var err error
	if p.in, err = p.cmd.StdinPipe(); err != nil {
		return nil, err
	}
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := p.cmd.Start(); err != nil {
		return nil, err
	}
	for _, t := range tasks {
		if err := os.WriteFile(filepath.Join(t, "cgroup.procs"), []byte(strconv.Itoa(p.cmd.Process.Pid)), 0); err != nil {
			return nil, fmt.Errorf("move pid into %s: %w", t, err)
		}
	}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			line := sc.Text()
			fmt.Fprintf(logw, "job %s: %s\n", id, line)
			p.mu.Lock()
			p.lines = append(p.lines, line)
			p.mu.Unlock()
			select {
			case p.seen <- line:
			default:
			}
		}
		close(p.seen)
	}()
	return p, nil
}

// do sends a command and waits for an output line containing want.
func (p *loadProc) do(cmd, want string, timeout time.Duration) (string, error) {
	if _, err := fmt.Fprintln(p.in, cmd); err != nil {
		return "", err
	}
	if want == "" {
		return "", nil
	}
	deadline := time.After(timeout)
	for {
		select {
		case line, ok := <-p.seen:
			if !ok {
				return "", fmt.Errorf("job %s: gpuload exited waiting for %q", p.id, want)
			}
			if strings.Contains(line, " error ") {
				return line, fmt.Errorf("job %s: %s", p.id, line)
			}
			if strings.Contains(line, want) {
				return line, nil
			}
		case <-deadline:
			return "", fmt.Errorf("job %s: no %q within %s", p.id, want, timeout)
		}
	}
}

// stop ends the process and removes its cgroups.
func (p *loadProc) stop() {
	fmt.Fprintln(p.in, "exit")
	p.in.Close()
	done := make(chan struct{})
	go func() { _ = p.cmd.Wait(); close(done) }() // its exit status is not the check
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		_ = p.cmd.Process.Kill() // gone meanwhile: done closes anyway
		<-done
	}
	for _, d := range p.dirs {
		os.Remove(d)
	}
}

// memUsed parses "used=N" from a meminfo line.
func memUsed(line string) float64 {
	for _, f := range strings.Fields(line) {
		if v, ok := strings.CutPrefix(f, "used="); ok {
			n, _ := strconv.ParseFloat(v, 64)
			return n
		}
	}
	return -1
}
