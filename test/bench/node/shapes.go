// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	fixturegen "github.com/jobscope/jobscope/test/gen/fixture"
)

// shape is one generated node: its cgroup version, jobs, cores, and the
// idle processes each job holds.
type shape struct {
	name    string
	v1      bool
	jobs    int
	cores   fixturegen.Shape
	user    int  // user processes per job (besides 3 slurmstepd)
	threads bool // user processes run several threads
	real    bool // kernel cgroups in this host's v1 hierarchies, eBPF on (real.go)
}

var shapes = map[string]shape{
	"v2-128":      {name: "v2, 128 jobs", jobs: 128, cores: fixturegen.DefaultShape, user: 3},
	"v2-512":      {name: "v2, 512 jobs", jobs: 512, cores: fixturegen.DefaultShape, user: 3},
	"v1-128":      {name: "v1, 128 jobs", v1: true, jobs: 128, cores: fixturegen.DefaultShape, user: 3},
	"v1-512":      {name: "v1, 512 jobs", v1: true, jobs: 512, cores: fixturegen.DefaultShape, user: 3},
	"v2-256x1":    {name: "v2, 256 one-core jobs (256 cores)", jobs: 256, cores: oneCore, user: 3},
	"v1-256x1":    {name: "v1, 256 one-core jobs (256 cores)", v1: true, jobs: 256, cores: oneCore, user: 3},
	"v2-4x64":     {name: "v2, 4 jobs x 64 cores x 64 processes", jobs: 4, cores: wide, user: 64, threads: true},
	"v1-4x64":     {name: "v1, 4 jobs x 64 cores x 64 processes", v1: true, jobs: 4, cores: wide, user: 64, threads: true},
	"v2-16":       {name: "v2, 16 jobs (smoke)", jobs: 16, cores: fixturegen.DefaultShape, user: 3},
	"v1-16":       {name: "v1, 16 jobs (smoke)", v1: true, jobs: 16, cores: fixturegen.DefaultShape, user: 3},
	"v2-128-np":   {name: "v2, 128 jobs, no processes", jobs: 128, cores: fixturegen.DefaultShape},
	"v1-real-128": {name: "v1, 128 jobs as kernel cgroups of this host, eBPF on", v1: true, real: true, jobs: 128, user: 3},
	"v1-real-16":  {name: "v1, 16 jobs as kernel cgroups of this host, eBPF on (smoke)", v1: true, real: true, jobs: 16, user: 3},
	"v1-real-512": {name: "v1, 512 jobs as kernel cgroups of this host, eBPF on", v1: true, real: true, jobs: 512, user: 3},
}

var (
	oneCore = fixturegen.Shape{Cores: 256, JobCores: strconv.Itoa}
	wide    = fixturegen.Shape{Cores: 256, JobCores: func(i int) string { return fmt.Sprintf("%d-%d", 64*i, 64*i+63) }}
)

// node is a generated tree with its processes running.
type node struct {
	root, cgroup string
	procs        []*exec.Cmd
	floor        []string // files one default scrape reads, in order; a trailing "/" lists a directory
	real         bool
	dirs         []string // a real shape's cgroups, parents first
}

// build generates the tree and starts the processes: per job, the user
// processes in step_0's task_0 and one slurmstepd per step, their pids
// written into cgroup.procs as slurmstepd does on a real node.
func build(sh shape, bin string) (*node, error) {
	root, err := os.MkdirTemp(fixturegen.BenchDir(), "jobscope-bench-")
	if err != nil {
		return nil, err
	}
	n := &node{root: root, cgroup: filepath.Join(root, "cgroup")}
	stepd := filepath.Join(root, "slurmstepd") // /bin/sleep under slurmstepd's name
	if b, err := os.ReadFile("/bin/sleep"); err != nil {
		return n, err
	} else if err := os.WriteFile(stepd, b, 0o755); err != nil {
		return n, err
	}
	if sh.real {
		return buildReal(sh, root, bin, stepd)
	}
	if sh.v1 {
		err = fixturegen.V1Node(n.cgroup, sh.jobs, sh.cores)
	} else if err = fixturegen.V2Node(n.cgroup, sh.jobs); err == nil {
		err = fixturegen.SetV2Cores(n.cgroup, sh.jobs, sh.cores)
	}
	if err != nil {
		return n, err
	}
	for i := range sh.jobs {
		job := jobDir(n.cgroup, sh, i)
		if !sh.v1 {
			blankProcs(job) // the generator's cgroup.procs hold a placeholder
		}
		user, steps, err := startJob(n, sh, bin, stepd)
		if err != nil {
			return n, err
		}
		taskDir, stepDirs := filepath.Join(job, "step_0", "user", "task_0"), []string{"step_batch/slurm", "step_extern/slurm", "step_0/slurm"}
		if sh.v1 {
			taskDir, stepDirs = filepath.Join(job, "step_0", "task_0"), []string{"step_batch", "step_extern", "step_0"}
		}
		if err := writePIDs(taskDir, user); err != nil {
			return n, err
		}
		for k, d := range stepDirs {
			if err := writePIDs(filepath.Join(job, d), steps[k:k+1]); err != nil {
				return n, err
			}
		}
		n.floor = append(n.floor, floorFiles(n.cgroup, sh, i, append(user, steps...))...)
	}
	return n, nil
}

// startJob starts one job's processes: sh.user user processes (idle
// threads where the shape asks) and one slurmstepd per step.
func startJob(n *node, sh shape, bin, stepd string) (user, steps []int, err error) {
	for range sh.user {
		c := exec.Command("/bin/sleep", "1000000")
		if sh.threads {
			c = exec.Command(bin, "-idle-threads=4")
		}
		if err := start(n, c); err != nil {
			return nil, nil, err
		}
		user = append(user, c.Process.Pid)
	}
	for range 3 {
		c := exec.Command(stepd, "1000000")
		if err := start(n, c); err != nil {
			return nil, nil, err
		}
		steps = append(steps, c.Process.Pid)
	}
	return user, steps, nil
}

func start(n *node, c *exec.Cmd) error {
	if err := c.Start(); err != nil {
		return err
	}
	n.procs = append(n.procs, c)
	return nil
}

func (n *node) close() {
	for _, c := range n.procs {
		_ = c.Process.Kill()
		_, _ = c.Process.Wait()
	}
	if n.real {
		removeReal(n.dirs)
	}
	_ = os.RemoveAll(n.root)
}

func jobDir(cgroup string, sh shape, i int) string {
	if sh.v1 {
		return filepath.Join(cgroup, "memory", v1Top(sh), "uid_1000", fmt.Sprintf("job_%d", 1000+i))
	}
	return filepath.Join(cgroup, "system.slice", "slurmstepd.scope", fmt.Sprintf("job_%d", 1000+i))
}

func v1Top(sh shape) string {
	if sh.real {
		return realTop
	}
	return "slurm"
}

func blankProcs(job string) {
	_ = filepath.WalkDir(job, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Name() == "cgroup.procs" {
			err = os.WriteFile(p, nil, 0o644)
		}
		return err
	})
}

func writePIDs(dir string, pids []int) error {
	var b strings.Builder
	for _, p := range pids {
		fmt.Fprintf(&b, "%d\n", p)
	}
	return os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(b.String()), 0o644)
}
