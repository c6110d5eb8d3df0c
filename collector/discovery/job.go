package discovery

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
)

// Job is one Slurm job seen in this node's cgroups during one scrape.
type Job struct {
	ID      string // the Slurm job id (numeric; array tasks have their own raw id)
	Version int    // 1 or 2: the cgroup version holding the job
	// Dir is the v2 job directory; empty on v1.
	Dir string
	// V1 maps a v1 controller to the job directory in its hierarchy.
	V1 map[string]string

	Meta Meta

	pidsOnce sync.Once
	pids     []int
}

// Labels are the per-job label values every slurm_job_* series starts with.
func (j *Job) Labels() []string { return []string{j.ID, j.Meta.User, j.Meta.Account} }

// JobLabelNames match Labels.
var JobLabelNames = []string{"jobid", "user", "account"}

// ControllerDir returns where a controller's files of this job are:
// the job directory on v2 (every controller lives there), or the job
// directory in that controller's v1 hierarchy ("" when the job has none).
func (j *Job) ControllerDir(controller string) string {
	if j.Version == 2 {
		return j.Dir
	}
	return j.V1[controller]
}

// PIDs lists the processes in the job's cgroups (every step and task),
// read once per scrape. Unreadable or vanished directories give what
// could be read: a job ending mid-scrape is normal.
func (j *Job) PIDs() []int {
	j.pidsOnce.Do(func() {
		dir := j.Dir
		if j.Version == 1 {
			dir = ""
			for _, c := range v1Controllers {
				if d := j.V1[c]; d != "" {
					dir = d
					break
				}
			}
		}
		if dir != "" {
			j.pids = readProcsTree(dir, 4)
			sort.Ints(j.pids)
		}
	})
	return j.pids
}

// readProcsTree reads cgroup.procs of dir and of its sub-directories down to
// depth levels (job -> step -> user -> task is the deepest Slurm layout).
func readProcsTree(dir string, depth int) []int {
	pids := readProcs(filepath.Join(dir, "cgroup.procs"))
	if depth == 0 {
		return pids
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return pids
	}
	for _, e := range entries {
		if e.IsDir() {
			pids = append(pids, readProcsTree(filepath.Join(dir, e.Name()), depth-1)...)
		}
	}
	return pids
}

func readProcs(path string) []int {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var pids []int
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if p, err := strconv.Atoi(sc.Text()); err == nil && p > 0 {
			pids = append(pids, p)
		}
	}
	return pids
}
