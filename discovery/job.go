package discovery

import (
	"bytes"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// Job is one Slurm job seen in this node's cgroups during one scrape.
type Job struct {
	ID string // the Slurm job id (numeric; array tasks have their own raw id)
	// SLUID is Slurm 26.05's job id unique across the cluster and over
	// time, when the cgroup directory is named by it ("" otherwise; the
	// metadata may still carry one in Meta.SLUID).
	SLUID   string
	Version int // 1 or 2: the cgroup version holding the job
	// Dir is the v2 job directory; empty on v1.
	Dir string
	// V1 maps a v1 controller to the job directory in its hierarchy.
	V1 map[string]string

	Meta Meta

	ino      uint64 // inode of the (first) job directory: tells a reused id apart
	node     string // Slurm node name of the scope's prefix, "" without one
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

// readProcsTree reads cgroup.procs of a job directory and of the Slurm
// directories below it: step_*/ (listed), and in each step slurm/, user/
// and task_N/ (probed by name), and user/task_special, which Slurm 26.05
// makes for a step's processes that belong to no task. Listing a cgroup directory reads ~60 file
// names per call, so only the job level, whose step ids are unknown, is
// listed; Slurm numbers a node's tasks from 0 without gaps.
func readProcsTree(dir string, depth int) []int {
	pids := readProcs(dir)
	if depth == 0 {
		return pids
	}
	for _, name := range subdirs(dir) {
		step := filepath.Join(dir, name)
		if !strings.HasPrefix(name, "step_") {
			pids = append(pids, readProcsTree(step, depth-1)...)
			continue
		}
		pids = append(pids, readProcs(step)...)
		pids = append(pids, readProcs(filepath.Join(step, "slurm"))...)
		pids = append(pids, readTasks(step)...)
		user := filepath.Join(step, "user")
		pids = append(pids, readProcs(user)...)
		pids = append(pids, readTasks(user)...)
		pids = append(pids, readProcs(filepath.Join(user, "task_special"))...)
	}
	return pids
}

// readTasks reads task_0, task_1, ... until one is missing.
func readTasks(dir string) []int {
	var pids []int
	for i := 0; i < 1<<16; i++ {
		p, ok := readProcsOK(filepath.Join(dir, "task_"+strconv.Itoa(i)))
		if !ok {
			return pids
		}
		pids = append(pids, p...)
	}
	return pids
}

// PrefetchPIDs reads the pids of all jobs with a few workers, so that a
// collector walking jobs one by one does not wait on each job's tree.
func PrefetchPIDs(jobs []*Job, workers int) {
	work := make(chan *Job)
	var wg sync.WaitGroup
	for range max(1, min(workers, len(jobs))) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range work {
				j.PIDs()
			}
		}()
	}
	for _, j := range jobs {
		work <- j
	}
	close(work)
	wg.Wait()
}

func readProcs(dir string) []int {
	p, _ := readProcsOK(dir)
	return p
}

var procsBufs = sync.Pool{New: func() any { b := make([]byte, 64<<10); return &b }}

// readProcsOK parses dir/cgroup.procs; ok is false when it cannot be read
// (the directory does not exist).
func readProcsOK(dir string) (pids []int, ok bool) {
	fd, err := unix.Open(dir+"/cgroup.procs", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, false
	}
	defer unix.Close(fd)
	bp := procsBufs.Get().(*[]byte)
	defer procsBufs.Put(bp)
	buf := *bp
	rest := 0 // bytes of an unfinished number carried to the next read
	for {
		n, err := unix.Read(fd, buf[rest:])
		if err == unix.EINTR {
			continue
		}
		if err != nil || n <= 0 {
			if rest > 0 {
				pids = appendPID(pids, buf[:rest])
			}
			return pids, true
		}
		b := buf[:rest+n]
		for {
			i := bytes.IndexByte(b, '\n')
			if i < 0 {
				break
			}
			pids = appendPID(pids, b[:i])
			b = b[i+1:]
		}
		rest = copy(buf, b)
		if rest == len(buf) {
			return pids, true // a line longer than 64 KiB is no pid
		}
	}
}

func appendPID(pids []int, b []byte) []int {
	p, err := strconv.Atoi(string(bytes.TrimSpace(b)))
	if err == nil && p > 0 {
		pids = append(pids, p)
	}
	return pids
}

// StepDirs lists the step directories of a job directory and, below each,
// its task_N directories (the v1 layout), for counters that the kernel keeps
// per cgroup rather than per hierarchy.
func StepDirs(jobDir string) []string {
	var dirs []string
	for _, name := range subdirs(jobDir) {
		if !strings.HasPrefix(name, "step_") {
			continue
		}
		step := filepath.Join(jobDir, name)
		dirs = append(dirs, step)
		for i := 0; i < 1<<16; i++ {
			task := filepath.Join(step, "task_"+strconv.Itoa(i))
			var st unix.Stat_t
			if unix.Stat(task, &st) != nil {
				break
			}
			dirs = append(dirs, task)
		}
	}
	return dirs
}
