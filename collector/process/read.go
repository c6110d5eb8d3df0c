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

	"github.com/prometheus/procfs"
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
	fs      procfs.FS
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
	if _, serr := os.Stat(filepath.Join(r.root, strconv.Itoa(pid))); procVanished(serr) {
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
	bp := procBufs.Get().(*[]byte)
	defer procBufs.Put(bp)
	b, err := r.readRaw(pid, "stat", *bp)
	if err != nil {
		if !procVanished(err) {
			ri.found++
		}
		r.classify(ri, pid, err)
		return
	}
	ri.found++
	st, err := parseStat(b)
	if err != nil {
		r.classify(ri, pid, fmt.Errorf("%s/%d/%w", r.root, pid, err))
		return
	}
	if st.flags&procPFKthread != 0 {
		return
	}
	// The procfs library's handle, for what the default scrape does not
	// read (executables, fd targets, threads) and the fd listing fallback.
	var p procfs.Proc
	proc := func() (procfs.Proc, error) {
		if p.PID != 0 {
			return p, nil
		}
		var err error
		p, err = r.fs.Proc(pid)
		return p, err
	}
	var exe string
	if r.exe {
		if p, err := proc(); err != nil {
			r.classify(ri, pid, err)
		} else if exe, err = p.Executable(); err != nil {
			r.classify(ri, pid, err)
			exe = ""
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
		if b, err := r.readRaw(pid, "io", *bp); err != nil {
			r.classify(ri, pid, err)
		} else if io, err := parseIO(b); err != nil {
			r.classify(ri, pid, fmt.Errorf("%s/%d/%w", r.root, pid, err))
		} else {
			ps.io, ps.hasIO = io, true
		}
	}
	js.procs = append(js.procs, ps)

	if len(r.mounts) > 0 {
		// The fd links are read anyway: their number is the fd count.
		if p, err := proc(); err != nil {
			r.classify(ri, pid, err)
		} else {
			r.countFiles(p, pid, js, ri)
		}
	} else if n, err := r.fdCount(pid, func() (int, error) {
		p, err := proc()
		if err != nil {
			return 0, err
		}
		return p.FileDescriptorsLen()
	}); err == nil {
		js.fds += n
	} else {
		r.classify(ri, pid, err)
	}
	if !r.threads {
		return
	}
	tids, err := r.fs.AllThreads(pid)
	if err != nil {
		r.classify(ri, pid, err)
		return
	}
	for _, t := range tids {
		r.readThread(pid, t, js, ri)
	}
}

func (r *procReader) countFiles(p procfs.Proc, pid int, js *procJobSample, ri *procReadIssues) {
	targets, err := p.FileDescriptorTargets()
	if err != nil {
		r.classify(ri, pid, err)
		return
	}
	js.fds += len(targets)
	for _, t := range targets {
		for i, m := range r.mounts {
			if procUnderMount(t, m) {
				js.files[i]++
			}
		}
	}
}

// procUnderMount matches by path: fd targets come from the kernel's d_path, so
// no lookup (which could hang on a dead network filesystem) is needed.
func procUnderMount(target, mount string) bool {
	if !strings.HasPrefix(target, mount) {
		return false
	}
	return len(target) == len(mount) || mount == "/" || target[len(mount)] == '/'
}

func (r *procReader) readThread(pid int, t procfs.Proc, js *procJobSample, ri *procReadIssues) {
	st, err := t.Stat()
	if err != nil {
		r.classify(ri, pid, err)
		return
	}
	js.threads[procStateIndex(st.State)]++
	ts := procTaskSample{key: procTaskKey{pid: pid, tid: t.PID, start: st.Starttime}}
	// /proc/<pid>/status holds the main thread's switches only: each
	// thread's own file is the one place to read them.
	status, err := t.NewStatus()
	if err != nil {
		r.classify(ri, pid, err)
		return
	}
	ts.ctrs[procCtrVoluntary] = status.VoluntaryCtxtSwitches
	ts.ctrs[procCtrInvoluntary] = status.NonVoluntaryCtxtSwitches
	js.tasks = append(js.tasks, ts)
}
