// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// A real shape builds its jobs as kernel cgroups in this machine's v1
// hierarchies, so that jobscope runs as it ships: eBPF attached and
// counting the jobs' processes, every file served by the kernel. It needs
// root and a host with v1 controllers (this project's machines); generated
// trees cannot show what the eBPF collector costs.
var (
	realControllers = []string{"memory", "cpuacct", "cpu", "blkio", "cpuset"}
	realSteps       = []string{"step_batch", "step_extern", "step_0"}
)

// realTop is the v1 parent of the real shapes' jobs: a slurm_<node>
// directory (Slurm's layout with several slurmd on one host), so a real
// Slurm on the machine keeps its own slurm/ tree.
const realTop = "slurm_benchnode"

// buildReal creates, in each controller, <top>/uid_1000/job_<n> with its
// steps and task_0, starts the processes (startJob) and moves each into every
// controller (cgroup v1 takes one pid per write).
func buildReal(sh shape, root, bin, stepd string) (*node, error) {
	n := &node{root: root, cgroup: "/sys/fs/cgroup", real: true}
	for _, c := range realControllers {
		top := filepath.Join(n.cgroup, c, realTop)
		n.dirs = append(n.dirs, top, filepath.Join(top, "uid_1000"))
		if err := mkCgroup(top); err != nil {
			return n, err
		}
		if err := mkCgroup(filepath.Join(top, "uid_1000")); err != nil {
			return n, err
		}
	}
	for i := range sh.jobs {
		user, steps, err := startJob(n, sh, bin, stepd)
		if err != nil {
			return n, err
		}
		for _, c := range realControllers {
			job := filepath.Join(n.cgroup, c, realTop, "uid_1000", fmt.Sprintf("job_%d", 1000+i))
			dirs := []string{job}
			for _, s := range realSteps {
				dirs = append(dirs, filepath.Join(job, s), filepath.Join(job, s, "task_0"))
			}
			for _, d := range dirs {
				if err := mkCgroup(d); err != nil {
					return n, err
				}
				n.dirs = append(n.dirs, d)
			}
			for k, s := range realSteps {
				if err := movePIDs(filepath.Join(job, s), steps[k:k+1]); err != nil {
					return n, err
				}
			}
			if err := movePIDs(filepath.Join(job, "step_0", "task_0"), user); err != nil {
				return n, err
			}
		}
		n.floor = append(n.floor, floorFiles(n.cgroup, sh, i, append(user, steps...))...)
	}
	return n, nil
}

// mkCgroup creates a v1 cgroup; a cpuset one gets its parent's cpus and
// mems, without which no task can join it.
func mkCgroup(dir string) error {
	if err := os.Mkdir(dir, 0o755); err != nil && !os.IsExist(err) {
		return err
	}
	if !strings.Contains(dir, "/cpuset/") {
		return nil
	}
	for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
		b, err := os.ReadFile(filepath.Join(filepath.Dir(dir), f))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			return fmt.Errorf("%s: %w", filepath.Join(dir, f), err)
		}
	}
	return nil
}

func movePIDs(dir string, pids []int) error {
	for _, p := range pids {
		if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(p)), 0o644); err != nil {
			return fmt.Errorf("%s: %w", dir, err)
		}
	}
	return nil
}

// removeReal removes the cgroups deepest first, once their processes are
// gone (node.close kills them first).
func removeReal(dirs []string) {
	for i := len(dirs) - 1; i >= 0; i-- {
		_ = os.Remove(dirs[i])
	}
}

// realConfigs turns each default configuration into the one that ships,
// eBPF on, and keeps this binary's eBPF-off run beside it to show what the
// eBPF collector adds. The cgroup collector alone stays as it is.
func realConfigs(cs []config) []config {
	var out []config
	for _, c := range cs {
		if c.cgroup || len(c.env) > 0 {
			out = append(out, c)
			continue
		}
		on := c
		on.name += ", eBPF on"
		on.flags = append([]string{"--collector.ebpf=true"}, c.flags...)
		on.ebpf = true
		out = append(out, on)
		if !strings.HasPrefix(c.name, "main:") {
			off := c
			off.name += ", eBPF off"
			out = append(out, off)
		}
	}
	return out
}
