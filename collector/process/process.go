// SPDX-License-Identifier: Apache-2.0

package process

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/pflag"

	"github.com/jobscope/jobscope/collector"
	"github.com/jobscope/jobscope/collector/provide"
	"github.com/jobscope/jobscope/collector/provide/ebpfprogs"
	"github.com/jobscope/jobscope/discovery"
	"github.com/jobscope/jobscope/internal/flagval"
)

// procUserHZ is the unit of utime/stime in /proc/<pid>/stat on every Linux
// architecture jobscope builds for.
const procUserHZ = 100

// IO modes of the /proc/<pid>/io fallback.
const (
	IOAuto = "auto" // on unless the ebpf collector is loaded
	IOOn   = "on"
	IOOff  = "off"
)

// Options configure the process collector.
type Options struct {
	// Mounts are mount points whose open files are counted per job.
	Mounts []string
	// TopN is how many executables per job get their own CPU series.
	TopN int
	// Threads reads every thread's stat and status (thread states, context
	// switches); without it only /proc/<pid> files are read.
	Threads bool
	// IO is IOAuto, IOOn or IOOff.
	IO string
	// EBPFLoaded says that the ebpf programs count IO (auto mode then
	// leaves it to them); the factory sets it from Env.BPF.
	EBPFLoaded bool
	// Level is --metrics.level: basic counts processes without their
	// states, leaves out CPU per executable (and does not read
	// /proc/<pid>/exe) and syscall IO.
	Level collector.Level
}

// Factory describes the process collector.
func Factory() collector.Factory {
	return collector.Factory{
		Name:      "process",
		Help:      "Per-job processes, threads, open files, context switches and CPU per executable from procfs",
		DefaultIn: []collector.Mode{collector.ModeNode},
		NeedsJobs: true,
		Descs:     func() []*collector.Desc { return collector.DescsOf(newProcDescs()) },
		Flags: func(fs *pflag.FlagSet) func(env *collector.Env) (collector.Collector, error) {
			o := &Options{}
			fs.StringSliceVar(&o.Mounts, "collector.process.fs", nil,
				"Mount points (comma-separated) whose open files are counted per job, e.g. /scratch,/home; each must exist.")
			// A mount point that does not exist is a typo that would count
			// nothing, in silence.
			flagval.Check(fs, "collector.process.fs", flagval.Each(func(m string) error {
				if err := flagval.Abs(m); err != nil {
					return err
				}
				return flagval.Dir(m)
			}))
			flagval.Int(fs, &o.TopN, "collector.process.top-n", 5, 0,
				"Executables per job with their own CPU series; the rest is summed as exe=\"other\".")
			fs.BoolVar(&o.Threads, "collector.process.threads", false,
				"Also read every thread's stat and status: threads by state and context switches (several times the cost of the per-process files).")
			flagval.Enum(fs, &o.IO, "collector.process.io", IOAuto, []string{IOAuto, IOOn, IOOff},
				"Per-job IO from /proc/<pid>/io: auto (only while the ebpf collector is not loaded), on or off.")
			return func(env *collector.Env) (collector.Collector, error) {
				o := *o
				_, o.EBPFLoaded = provide.Loaded[*ebpfprogs.Provider](env.Providers, ebpfprogs.Name)
				o.Level = env.Level
				return New(env, o)
			}
		},
	}
}

type processCollector struct {
	opts   Options
	env    *collector.Env
	reader procReader

	d procDescs
	// jobs keeps each job's accounting between scrapes; a job's lock is
	// held from reading its processes to emitting its counters.
	jobs *collector.State[procJobAcct]
	pool *collector.JobPool
}

// New builds the process collector over env.ProcFS.
func New(env *collector.Env, o Options) (collector.Collector, error) {
	if o.TopN < 0 {
		return nil, fmt.Errorf("--collector.process.top-n must not be negative, got %d", o.TopN)
	}
	switch o.IO {
	case "":
		o.IO = IOAuto
	case IOAuto, IOOn, IOOff:
	default:
		return nil, fmt.Errorf("--collector.process.io must be auto, on or off, got %q", o.IO)
	}
	mounts := make([]string, 0, len(o.Mounts))
	for _, m := range o.Mounts {
		if m == "" {
			continue
		}
		if !filepath.IsAbs(m) {
			return nil, fmt.Errorf("--collector.process.fs: %q is not an absolute path", m)
		}
		// "/scratch" and "/scratch/" are one mount: one series.
		if c := filepath.Clean(m); !slices.Contains(mounts, c) {
			mounts = append(mounts, c)
		}
	}
	o.Mounts = mounts
	root := env.ProcFS
	if root == "" {
		root = "/proc"
	}
	if st, err := os.Stat(root); err != nil {
		return nil, fmt.Errorf("procfs at %s: %w", root, err)
	} else if !st.IsDir() {
		return nil, fmt.Errorf("procfs at %s: not a directory", root)
	}
	d := newProcDescs()
	return &processCollector{
		opts: o,
		env:  env,
		// /proc/<pid>/exe is read only where CPU by executable is sent.
		reader: procReader{root: root, mounts: mounts, threads: o.Threads, exe: o.Level.Emits(d.cpu), statFDs: isProcfs(root)},
		jobs:   collector.NewState(newProcJobAcct),
		pool:   collector.NewJobPool(procReadWorkers),
		d:      d,
	}, nil
}

// procDescs are the process collector's metrics.
type procDescs struct {
	processes, threads, fds, files, ctxsw, cpu, storageIO, syscallIO *collector.Desc
}

func newProcDescs() procDescs {
	return procDescs{
		processes: collector.NewJobDesc("slurm_job_processes",
			"Processes in the job's cgroups (cgroup.procs), from /proc/<pid>/stat; kernel threads left out. At --metrics.level=basic one series, state=\"all\"; at full by state (a process's state is its main thread's). cgroup v2 does not list zombie processes, so state=\"zombie\" counts zombie main threads whose other threads live on; state=\"other\" appears only when non-zero.", "state").Partly(`state="all"`, "by state"),
		threads: collector.NewJobDesc("slurm_job_threads",
			"Threads of the job's processes by state, from /proc/<pid>/task/<tid>/stat with --collector.process.threads; without it one series, state=\"all\", from the thread counts of /proc/<pid>/stat. state=\"other\" appears only when non-zero.", "state"),
		fds: collector.NewJobDesc("slurm_job_open_fds",
			"Open file descriptors of the job's processes (files, sockets, pipes), from /proc/<pid>/fd."),
		files: collector.NewJobDesc("slurm_job_open_files",
			"Open file descriptors of the job's processes whose path (as /proc/<pid>/fd shows it, in the process's mount namespace) lies under a mount point of --collector.process.fs.", "mount"),
		ctxsw: collector.NewJobDesc("slurm_job_context_switches_total",
			"Context switches of the job's threads, from /proc/<pid>/task/<tid>/status (only with --collector.process.threads); switches a thread made after the last scrape that saw it are missed.", "type"),
		cpu: collector.NewJobDesc("slurm_job_process_cpu_seconds_total",
			"User and system CPU time of the job's processes by executable (/proc/<pid>/exe, /proc/<pid>/stat). The top --collector.process.top-n executables by CPU get their own series; exe=\"other\" holds the rest, including an executable's time while it was outside the top N (an executable that enters or leaves the top N starts or stops its series there, and no series ever decreases); exe=\"unknown\" where /proc/<pid>/exe could not be read. CPU a process used after the last scrape that saw it is missed; the cgroup's CPU total is exact.", "exe").Full(),
		storageIO: collector.NewJobDesc("slurm_job_process_storage_io_bytes_total",
			"Storage IO of the job's processes from /proc/<pid>/io: read_bytes, and write_bytes (pages dirtied, which can exceed what reached the disk). Includes children a job process reaped; misses what an exited process did after the last scrape that saw it unless a job process reaped it. Only while the ebpf collector is not loaded (--collector.process.io).", "direction"),
		syscallIO: collector.NewJobDesc("slurm_job_process_syscall_io_bytes_total",
			"Bytes the job's processes passed through read- and write-type syscalls (files, pipes, sockets: rchar and wchar of /proc/<pid>/io). Includes children a job process reaped; misses what an exited process did after the last scrape that saw it unless a job process reaped it. Only while the ebpf collector is not loaded (--collector.process.io).", "direction").Full(),
	}
}

// ioOn decides whether to read the IO fallback.
func (c *processCollector) ioOn() bool {
	switch c.opts.IO {
	case IOOn:
		return true
	case IOOff:
		return false
	}
	return !c.opts.EBPFLoaded
}

func (c *processCollector) Collect(s *collector.Scrape, ch chan<- prometheus.Metric) error {
	withIO := c.ioOn()
	jobs := s.Jobs()
	var mu sync.Mutex
	var ri procReadIssues
	// A job's pids are read in its own task (cgroup.procs can block like
	// any file), not prefetched for all jobs at once.
	run := s.EachJob(c.pool, ch, func(j *discovery.Job, ch chan<- prometheus.Metric) {
		var sample procJobSample
		var jri procReadIssues
		series := s.Series(j)
		c.jobs.Job(s, j).Do(func(a *procJobAcct) {
			// Read and fold under the job's lock: an older reading folded
			// after a newer one would count an exited process twice.
			c.reader.readJob(j.PIDs(), &sample, withIO, &jri)
			a.gen++
			a.update(&sample, a.gen, c.opts.TopN)
			c.emit(ch, series, a, &sample, withIO)
		})
		mu.Lock()
		ri.merge(&jri)
		mu.Unlock()
	})
	var err error
	for _, j := range run.TimedOut {
		c.jobs.Job(s, j) // still running: keep its accounting
	}
	if !run.Complete(len(jobs)) {
		err = fmt.Errorf("process: %d jobs left unread: %w", len(jobs)-run.Done-len(run.TimedOut), s.Context().Err())
	} else {
		c.jobs.Sweep(s)
	}
	for cause, e := range ri.errs {
		s.Problem(cause, e)
	}
	if ri.listed >= 3 && ri.found == 0 {
		s.Problem("pids_not_visible", fmt.Errorf("none of %d job pids has an entry under %s (procfs mounted with hidepid, or another pid namespace?)", ri.listed, c.reader.root))
	}
	return err
}

// procReadWorkers read jobs' procfs files in parallel: the reads are
// syscalls; each job's accounting is cheap and under its own lock.
const procReadWorkers = 4

func (c *processCollector) emit(ch chan<- prometheus.Metric, series *collector.JobSeries, a *procJobAcct, js *procJobSample, withIO bool) {
	out := collector.NewOut(ch, c.opts.Level)
	gauge := func(d *collector.Desc, v float64, extra ...string) { out.Gauge(series, d, v, extra...) }
	counter := func(d *collector.Desc, v float64, extra ...string) { out.Counter(series, d, v, extra...) }
	if out.Whole(c.d.processes) {
		for i, n := range js.processes {
			if i != procStateOther || n > 0 {
				gauge(c.d.processes, float64(n), procStates[i])
			}
		}
	} else {
		n := 0
		for _, k := range js.processes {
			n += k
		}
		gauge(c.d.processes, float64(n), "all")
	}
	if c.opts.Threads {
		for i, n := range js.threads {
			if i != procStateOther || n > 0 {
				gauge(c.d.threads, float64(n), procStates[i])
			}
		}
	} else {
		gauge(c.d.threads, float64(js.nthreads), "all")
	}
	gauge(c.d.fds, float64(js.fds))
	for i, m := range c.reader.mounts {
		gauge(c.d.files, float64(js.files[i]), m)
	}
	if out.Emits(c.d.cpu) { // its top-N bookkeeping only where it is sent
		for _, v := range a.cpuSeries(nil) {
			counter(c.d.cpu, float64(v.ticks)/procUserHZ, v.exe)
		}
	}
	if c.opts.Threads {
		t := a.taskTotals()
		counter(c.d.ctxsw, float64(t[procCtrVoluntary]), "voluntary")
		counter(c.d.ctxsw, float64(t[procCtrInvoluntary]), "involuntary")
	}
	if withIO {
		io := a.ioTotals()
		counter(c.d.storageIO, float64(io[procIOReadBytes]), "read")
		counter(c.d.storageIO, float64(io[procIOWriteBytes]), "write")
		counter(c.d.syscallIO, float64(io[procIORChar]), "read")
		counter(c.d.syscallIO, float64(io[procIOWChar]), "write")
	}
}
