// SPDX-License-Identifier: Apache-2.0

package discovery

import (
	"bytes"
	"errors"
	"fmt"
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
	pidsErr  error
	// idFromEnv is set when the job id of a SLUID directory came from a job
	// process's environment alone: a hint, which an authoritative source
	// replaces and which never takes a job id from another directory.
	idFromEnv bool
}

// Labels are the per-job label values every slurm_job_* series starts with.
func (j *Job) Labels() []string { return []string{j.ID, j.Meta.User, j.Meta.Account} }

// JobLabelNames match Labels.
var JobLabelNames = []string{"jobid", "user", "account"}

// PIDs lists the processes in the job's cgroups (every step and task),
// read once per scrape. Unreadable or vanished directories give what
// could be read: a job ending mid-scrape is normal.
func (j *Job) PIDs() []int {
	j.pidsOnce.Do(func() {
		dir := j.firstDir()
		if dir != "" {
			j.pids, j.pidsErr = readProcsTree(dir, 4)
			sort.Ints(j.pids)
		}
	})
	return j.pids
}

// pidsError is what kept PIDs from reading a cgroup.procs that exists (a
// FIFO or other non-regular file, a symlink), nil when nothing did.
func (j *Job) pidsError() error {
	j.PIDs()
	return j.pidsErr
}

// readProcsTree reads cgroup.procs of a job directory and of the Slurm
// directories below it: step_*/ (listed), and in each step slurm/, user/
// and task_N/ (probed by name), and user/task_special, which Slurm 26.05
// makes for a step's processes that belong to no task. Listing a cgroup directory reads ~60 file
// names per call, so only the job level, whose step ids are unknown, is
// listed; Slurm numbers a node's tasks from 0 without gaps.
//
// Every directory is opened relative to its parent without following a
// symlink, and every cgroup.procs without blocking: a symlink or a FIFO
// planted in a tree never makes one job read another's processes or hold
// discovery. err is the first such file met.
func readProcsTree(dir string, depth int) (pids []int, err error) {
	fd, e := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if e != nil {
		return nil, nil // gone, or not a directory of ours: silent, as before
	}
	defer unix.Close(fd)
	w := procsWalk{}
	w.tree(fd, dir, depth)
	return w.pids, w.err
}

// procsWalk collects the pids of a job's directories.
type procsWalk struct {
	pids []int
	err  error
}

func (w *procsWalk) tree(fd int, path string, depth int) {
	w.procs(fd, path)
	if depth == 0 {
		return
	}
	for _, name := range subdirsFd(fd, path) {
		sub, subPath, ok := openSubdir(fd, path, name)
		if !ok {
			continue
		}
		if !strings.HasPrefix(name, "step_") {
			w.tree(sub, subPath, depth-1)
			unix.Close(sub)
			continue
		}
		w.procs(sub, subPath)
		w.in(sub, subPath, "slurm", func(fd int, p string) { w.procs(fd, p) })
		w.tasks(sub, subPath)
		w.in(sub, subPath, "user", func(fd int, p string) {
			w.procs(fd, p)
			w.tasks(fd, p)
			w.in(fd, p, "task_special", func(fd int, p string) { w.procs(fd, p) })
		})
		unix.Close(sub)
	}
}

// in runs fn on the sub-directory name of fd when it exists.
func (w *procsWalk) in(fd int, path, name string, fn func(fd int, path string)) bool {
	sub, subPath, ok := openSubdir(fd, path, name)
	if !ok {
		return false
	}
	defer unix.Close(sub)
	fn(sub, subPath)
	return true
}

// tasks reads task_0, task_1, ... until one is missing.
func (w *procsWalk) tasks(fd int, path string) {
	for i := 0; i < 1<<16; i++ {
		if !w.in(fd, path, "task_"+strconv.Itoa(i), func(fd int, p string) { w.procs(fd, p) }) {
			return
		}
	}
}

func (w *procsWalk) procs(fd int, path string) {
	p, err := readProcsAt(fd, path)
	w.pids = append(w.pids, p...)
	if err != nil && w.err == nil {
		w.err = err
	}
}

// openSubdir opens name below fd, not through a symlink; ok is false when
// it is absent, not a directory or a symlink.
func openSubdir(fd int, path, name string) (int, string, bool) {
	sub, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, "", false
	}
	return sub, path + "/" + name, true
}

var procsBufs = sync.Pool{New: func() any { b := make([]byte, 64<<10); return &b }}

// readProcsAt parses cgroup.procs in the directory fd (named path in
// errors). An absent file is no error (a directory without processes, or
// gone); one that is not a regular file, or a symlink, is.
func readProcsAt(dirfd int, path string) ([]int, error) {
	fd, err := openRegular(dirfd, "cgroup.procs", false)
	if err != nil {
		if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENODEV) {
			return nil, nil
		}
		return nil, fmt.Errorf("%s/cgroup.procs: %w", path, errors.Unwrap(err))
	}
	defer unix.Close(fd)
	return parseProcsFd(fd), nil
}

// parseProcsFd parses the pids of an open cgroup.procs, one buffer at a
// time.
func parseProcsFd(fd int) (pids []int) {
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
			return pids
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
			return pids // a line longer than 64 KiB is no pid
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
			// Lstat: a symlinked task directory is no cgroup of the job.
			var st unix.Stat_t
			if unix.Lstat(task, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
				break
			}
			dirs = append(dirs, task)
		}
	}
	return dirs
}
