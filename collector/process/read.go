// SPDX-License-Identifier: Apache-2.0

package process

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// procPFKthread is PF_KTHREAD in /proc/<pid>/stat's flags: kernel threads can
// sit in v1 cgroups but are not the job's work.
const procPFKthread = 0x00200000

// Process and thread states as reported, in the order they are emitted.
var procStates = [...]string{"running", "sleeping", "disk_sleep", "stopped", "zombie", "other"}

const procStateOther = 5

// procStateIndex maps the state letter of /proc/<pid>[/task/<tid>]/stat.
func procStateIndex(s string) int {
	switch s {
	case "R":
		return 0
	case "S":
		return 1
	case "D":
		return 2
	case "T", "t":
		return 3
	case "Z", "X", "x":
		return 4
	}
	return procStateOther // I (idle), P (parked), W, K: kernel-side states
}

// Per-thread counters kept across scrapes, in this order.
const (
	procCtrVoluntary = iota
	procCtrInvoluntary
	procNCounters
)

// Per-process IO counters of /proc/<pid>/io, in this order.
const (
	procIORChar = iota
	procIOWChar
	procIOReadBytes
	procIOWriteBytes
	procNIO
)

type procKey struct {
	pid   int
	start uint64 // starttime in clock ticks since boot: tells a reused pid apart
}

type procTaskKey struct {
	pid, tid int
	start    uint64
}

type procSample struct {
	key   procKey
	ppid  int
	exe   string // "" when unreadable (zombie, permission)
	ticks uint64 // utime+stime of the whole process (live and exited threads)
	io    [procNIO]uint64
	hasIO bool
}

type procTaskSample struct {
	key  procTaskKey
	ctrs [procNCounters]uint64
}

// procJobSample is one job's processes as read in one scrape.
type procJobSample struct {
	processes [len(procStates)]int // by the process's (main thread's) state
	threads   [len(procStates)]int // by thread state, with per-thread reads
	nthreads  int                  // from /proc/<pid>/stat, without them
	fds       int
	files     []int // per configured mount point
	procs     []procSample
	tasks     []procTaskSample
}

// procReadIssues keeps the first error per cause of one scrape, so a scrape
// reports each cause once however many processes hit it.
type procReadIssues struct {
	errs   map[string]error
	listed int // pids discovery listed
	found  int // pids whose /proc entry existed
}

func (ri *procReadIssues) add(cause string, err error) {
	if ri.errs == nil {
		ri.errs = map[string]error{}
	}
	if _, ok := ri.errs[cause]; !ok {
		ri.errs[cause] = err
	}
}

func (ri *procReadIssues) merge(o *procReadIssues) {
	ri.listed += o.listed
	ri.found += o.found
	for cause, err := range o.errs {
		ri.add(cause, err)
	}
}

// procReader reads the procfs files of given pids.
type procReader struct {
	root    string
	mounts  []string
	threads bool
	exe     bool // read /proc/<pid>/exe (CPU per executable, full level)
	statFDs bool // root is procfs: count fds by a stat of /proc/<pid>/fd
}

// procVanished reports whether err means the process or thread is gone.
func procVanished(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ESRCH)
}

// classify files an error under a cause; a process that exited mid-read is
// silent, even when the error was a half-read file.
func (r *procReader) classify(ri *procReadIssues, pid int, err error) {
	if err == nil || procVanished(err) {
		return
	}
	// Lstat: a planted symlink to nowhere as /proc/<pid> is reported,
	// not taken for an exited process.
	if _, serr := os.Lstat(filepath.Join(r.root, strconv.Itoa(pid))); procVanished(serr) {
		return
	}
	if errors.Is(err, fs.ErrPermission) {
		ri.add("permission_denied", err)
		return
	}
	ri.add("bad_procfs_file", err)
}

// readJob reads every pid of one job into js, which it resets.
func (r *procReader) readJob(pids []int, js *procJobSample, withIO bool, ri *procReadIssues) {
	*js = procJobSample{files: js.files[:0], procs: js.procs[:0], tasks: js.tasks[:0]}
	for range r.mounts {
		js.files = append(js.files, 0)
	}
	for _, pid := range pids {
		ri.listed++
		r.readProc(pid, js, withIO, ri)
	}
}

func (r *procReader) readProc(pid int, js *procJobSample, withIO bool, ri *procReadIssues) {
	bp := procBufs.Get().(*procScratch)
	defer procBufs.Put(bp)
	d, err := openPIDDir(r.root, pid)
	if err == nil {
		defer d.close()
		var b []byte
		if b, err = d.read("stat", bp.file); err == nil {
			ri.found++
			r.readOpenProc(d, pid, b, js, withIO, ri, bp)
			return
		}
	}
	if !procVanished(err) {
		ri.found++
	}
	r.classify(ri, pid, err)
}

// readOpenProc reads the rest of a process whose stat (b) was read.
func (r *procReader) readOpenProc(d pidDir, pid int, b []byte, js *procJobSample, withIO bool, ri *procReadIssues, bp *procScratch) {
	st, err := parseStat(b)
	if err != nil {
		r.classify(ri, pid, fmt.Errorf("%s/%w", d.path, err))
		return
	}
	if st.flags&procPFKthread != 0 {
		return
	}
	var exe string
	if r.exe {
		switch t, err := d.readlink("exe", bp.link); {
		case err == nil:
			exe = string(t)
		case !errors.Is(err, fs.ErrNotExist): // none: a zombie's or kernel thread's
			r.classify(ri, pid, err)
		}
	}
	js.processes[procStateIndex(st.state)]++
	js.nthreads += max(st.numThreads, 1)
	ps := procSample{
		key:   procKey{pid: pid, start: st.starttime},
		ppid:  st.ppid,
		exe:   strings.TrimSuffix(exe, " (deleted)"),
		ticks: st.utime + st.stime,
	}
	if withIO {
		// The process-wide file: it keeps the IO of exited threads and
		// takes in that of the children the process reaps.
		if b, err := d.read("io", bp.file); err != nil {
			r.classify(ri, pid, err)
		} else if io, err := parseIO(b); err != nil {
			r.classify(ri, pid, fmt.Errorf("%s/%w", d.path, err))
		} else {
			ps.io, ps.hasIO = io, true
		}
	}
	js.procs = append(js.procs, ps)

	if len(r.mounts) > 0 {
		// The fd links are read anyway: their number is the fd count.
		r.countFiles(d, pid, js, ri, bp)
	} else if n, err := r.fdCount(d, bp.dents); err == nil {
		js.fds += n
	} else {
		r.classify(ri, pid, err)
	}
	if !r.threads {
		return
	}
	tasks, err := d.openDir("task")
	if err != nil {
		r.classify(ri, pid, err)
		return
	}
	defer tasks.close()
	// The tids are listed first: each thread's reads need the file buffer.
	var tidBuf [64]int
	tids := tidBuf[:0]
	if err := tasks.each(bp.dents, func(name []byte) {
		if tid, ok := atoiName(name); ok {
			tids = append(tids, tid)
		}
	}); err != nil {
		r.classify(ri, pid, err)
		return
	}
	for _, tid := range tids {
		r.readThread(tasks, pid, tid, js, ri, bp.file)
	}
}

// countFiles counts a process's fds, and those whose target lies under
// each mount. fd/<n> are symlinks by nature: their targets are read, never
// opened.
func (r *procReader) countFiles(d pidDir, pid int, js *procJobSample, ri *procReadIssues, bp *procScratch) {
	fds, err := d.openDir("fd")
	if err != nil {
		r.classify(ri, pid, err)
		return
	}
	defer fds.close()
	var linkErr error
	err = fds.each(bp.dents, func(name []byte) {
		js.fds++
		t, err := fds.readlink(string(name), bp.link)
		if err != nil {
			// A descriptor closed since the listing is normal; anything
			// else (a planted regular file) is reported once below.
			if !procVanished(err) && linkErr == nil {
				linkErr = err
			}
			return
		}
		target := string(t)
		for i, m := range r.mounts {
			if procUnderMount(target, m) {
				js.files[i]++
			}
		}
	})
	if err == nil {
		err = linkErr
	}
	r.classify(ri, pid, err)
}

// procUnderMount matches by path: fd targets come from the kernel's d_path, so
// no lookup (which could hang on a dead network filesystem) is needed.
func procUnderMount(target, mount string) bool {
	if !strings.HasPrefix(target, mount) {
		return false
	}
	return len(target) == len(mount) || mount == "/" || target[len(mount)] == '/'
}

// readThread reads task/<tid>/stat and status of process pid.
func (r *procReader) readThread(tasks pidDir, pid, tid int, js *procJobSample, ri *procReadIssues, buf []byte) {
	t, err := tasks.openDir(strconv.Itoa(tid))
	if err != nil {
		r.classify(ri, pid, err)
		return
	}
	defer t.close()
	b, err := t.read("stat", buf)
	if err != nil {
		r.classify(ri, pid, err)
		return
	}
	st, err := parseStat(b)
	if err != nil {
		r.classify(ri, pid, fmt.Errorf("%s/%w", t.path, err))
		return
	}
	js.threads[procStateIndex(st.state)]++
	ts := procTaskSample{key: procTaskKey{pid: pid, tid: tid, start: st.starttime}}
	// /proc/<pid>/status holds the main thread's switches only: each
	// thread's own file is the one place to read them.
	if b, err = t.read("status", buf); err != nil {
		r.classify(ri, pid, err)
		return
	}
	if ts.ctrs, err = parseCtxtSwitches(b); err != nil {
		r.classify(ri, pid, fmt.Errorf("%s/%w", t.path, err))
		return
	}
	js.tasks = append(js.tasks, ts)
}
