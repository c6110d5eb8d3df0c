// SPDX-License-Identifier: Apache-2.0

package fixturegen

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// v1Files are the files a cgroup v1 controller directory of a Slurm job
// has on a 6.x kernel that jobscope may read, by controller, with their
// contents; every directory also gets cgroup.procs (empty).
var v1Files = map[string]map[string]string{
	"memory": {
		"memory.usage_in_bytes":       "2147483648\n",
		"memory.max_usage_in_bytes":   "3221225472\n",
		"memory.limit_in_bytes":       "4294967296\n",
		"memory.memsw.limit_in_bytes": "8589934592\n",
		"memory.failcnt":              "0\n",
		"memory.oom_control":          "oom_kill_disable 0\nunder_oom 0\noom_kill 0\n",
		"memory.stat": `cache 0
rss 0
rss_huge 0
shmem 0
mapped_file 0
dirty 0
writeback 0
swap 0
total_cache 241172480
total_rss 1879048192
total_rss_huge 629145600
total_shmem 4194304
total_mapped_file 20971520
total_dirty 1048576
total_writeback 0
total_swap 0
total_pgpgin 510000
total_pgpgout 400000
total_pgfault 510000
total_pgmajfault 12
total_inactive_anon 1879048192
total_active_anon 4194304
total_inactive_file 209715200
total_active_file 31457280
total_unevictable 0
`,
	},
	"cpuacct": {"cpuacct.usage": "7200000000000\n", "cpuacct.stat": "user 680000\nsystem 40000\n"},
	"cpu":     {"cpu.stat": "nr_periods 0\nnr_throttled 0\nthrottled_time 0\n"},
	"cpuset":  {"cpuset.mems": "0\n"},
	"blkio": {
		"blkio.throttle.io_service_bytes_recursive": "8:0 Read 1048576\n8:0 Write 524288000\n8:0 Sync 0\n8:0 Async 0\n8:0 Discard 0\n8:0 Total 525336576\nTotal 525336576\n",
		"blkio.throttle.io_serviced_recursive":      "8:0 Read 256\n8:0 Write 4000\n8:0 Sync 0\n8:0 Async 0\n8:0 Discard 0\n8:0 Total 4256\nTotal 4256\n",
	},
	"freezer": {"freezer.state": "THAWED\n"},
}

// Shape says what a generated node's jobs hold: each job's cores (a cpuset
// list) and the node's core count (cpuacct.usage_percpu's length).
type Shape struct {
	Cores    int
	JobCores func(job int) string
}

// DefaultShape gives each job cores 0-3 of a 4-core node, as V2Node does.
var DefaultShape = Shape{Cores: 4, JobCores: func(int) string { return "0-3" }}

// V1StepDirs are a v1 job's step and task directories, relative to its
// job directory, as Slurm makes them.
var V1StepDirs = []string{"step_batch", "step_batch/task_0", "step_extern", "step_extern/task_0", "step_0", "step_0/task_0"}

// V1Node writes cgroup v1 controller trees at dir (memory, cpuacct, cpu,
// cpuset, blkio, freezer) with n Slurm jobs under slurm/uid_1000/job_<id>,
// each with batch, extern and one srun step with a task directory.
func V1Node(dir string, n int, shape Shape) error {
	percpu := strings.TrimSpace(strings.Repeat("900000000 ", shape.Cores)) + "\n"
	for ctrl, files := range v1Files {
		for i := range n {
			job := filepath.Join(dir, ctrl, "slurm", "uid_1000", fmt.Sprintf("job_%d", 1000+i))
			for _, d := range append([]string{""}, V1StepDirs...) {
				d = filepath.Join(job, d)
				if err := os.MkdirAll(d, 0o755); err != nil {
					return err
				}
				if err := writeFile(filepath.Join(d, "cgroup.procs"), "\n"); err != nil {
					return err
				}
				for name, content := range files {
					if err := writeFile(filepath.Join(d, name), content); err != nil {
						return err
					}
				}
				switch ctrl {
				case "cpuacct":
					if err := writeFile(filepath.Join(d, "cpuacct.usage_percpu"), percpu); err != nil {
						return err
					}
				case "cpuset":
					if err := writeFile(filepath.Join(d, "cpuset.cpus"), shape.JobCores(i)+"\n"); err != nil {
						return err
					}
				}
			}
		}
	}
	return nil
}

// SetV2Cores rewrites the cpusets of V2Node's jobs for shape.
func SetV2Cores(dir string, n int, shape Shape) error {
	for i := range n {
		job := filepath.Join(dir, "system.slice", "slurmstepd.scope", fmt.Sprintf("job_%d", 1000+i))
		for _, f := range []string{"cpuset.cpus", "cpuset.cpus.effective"} {
			if err := writeFile(filepath.Join(job, f), shape.JobCores(i)+"\n"); err != nil {
				return err
			}
		}
	}
	return nil
}
