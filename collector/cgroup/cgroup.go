// SPDX-License-Identifier: Apache-2.0

package cgroup

import (
	"errors"
	"runtime"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/pflag"

	"github.com/jobscope/jobscope/cgroupfs"
	"github.com/jobscope/jobscope/collector"
	"github.com/jobscope/jobscope/collector/provide"
	"github.com/jobscope/jobscope/collector/provide/ebpfprogs"
	"github.com/jobscope/jobscope/collector/provide/jobcgroup"
	"github.com/jobscope/jobscope/discovery"
	"github.com/jobscope/jobscope/internal/flagval"
)

// Factory describes the cgroup collector: memory, CPU, pressure,
// block IO and pids of each job, from its job-level cgroup.
func Factory() collector.Factory {
	return collector.Factory{
		Name:      "cgroup",
		Help:      "Per-job memory, CPU, throttling, pressure, block IO and pids from cgroupfs",
		DefaultIn: []collector.Mode{collector.ModeNode},
		NeedsJobs: true,
		Needs:     []string{jobcgroup.Name},
		Descs:     func() []*collector.Desc { return collector.DescsOf(newCgroupDescs()) },
		Flags: func(fs *pflag.FlagSet) func(env *collector.Env) (collector.Collector, error) {
			workers := new(int)
			flagval.Int(fs, workers, "collector.cgroup.workers", 0, 0, "Jobs read in parallel by the cgroup collector (0: number of CPUs, at most 4).")
			return func(env *collector.Env) (collector.Collector, error) {
				if env.Layout.V2 == "" && len(env.Layout.V1) == 0 {
					// Nothing can look job-shaped here: success 0, not an
					// idle node that reports 0 jobs with success 1.
					return nil, collector.WithCause(NoHierarchy, errNoHierarchy)
				}
				usage, err := provide.Need[*jobcgroup.Provider](env.Providers, jobcgroup.Name)
				if err != nil {
					return nil, err
				}
				_, ebpf := provide.Loaded[*ebpfprogs.Provider](env.Providers, ebpfprogs.Name)
				return New(Options{Workers: *workers, SysFS: env.SysFS, PerCoreFromEBPF: ebpf, Level: env.Level, Usage: usage}), nil
			}
		},
	}
}

// NoHierarchy is the cause label of a cgroup collector that found no cgroup
// hierarchy to read (jobscope_collector_errors_total{cause}).
const NoHierarchy = "no_cgroup_hierarchy"

var errNoHierarchy = errors.New("no cgroup hierarchy (no cgroup.controllers, no v1 controller directory) under --path.cgroupfs or in the mount table: no job can be found")

// Options configure the cgroup collector.
type Options struct {
	Workers int
	SysFS   string // for block device names
	// Now is the clock of the static-file cache (tests set it).
	Now func() time.Time
	// PerCoreFromEBPF leaves slurm_job_cpu_core_seconds_total to the ebpf
	// collector (its programs are loaded) so one node has one source for it.
	PerCoreFromEBPF bool
	// Level is --metrics.level: basic leaves out the breakdowns (and does
	// not read the files only they need).
	Level collector.Level
	// Usage reads the job's CPU, memory and cores, shared with the other
	// collectors (nil: a reader of its own).
	Usage *jobcgroup.Provider
}

type cgroupCollector struct {
	opts    Options
	d       cgroupDescs
	devices *deviceNames
	state   *collector.State[jobState]
	readers sync.Pool
	pool    *collector.JobPool
}

// New builds the collector.
func New(opts Options) collector.Collector {
	if opts.Workers <= 0 {
		opts.Workers = min(runtime.NumCPU(), 4)
	}
	if opts.SysFS == "" {
		opts.SysFS = "/sys"
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Usage == nil {
		opts.Usage = jobcgroup.New()
	}
	c := &cgroupCollector{opts: opts, d: newCgroupDescs(), devices: newDeviceNames(opts.SysFS),
		state: collector.NewState(newJobState), pool: collector.NewJobPool(opts.Workers)}
	c.readers.New = func() any { return cgroupfs.NewReader() }
	return c
}

func (c *cgroupCollector) Collect(s *collector.Scrape, ch chan<- prometheus.Metric) error {
	perCore := !c.opts.PerCoreFromEBPF
	run := s.EachJob(c.pool, ch, func(j *discovery.Job, ch chan<- prometheus.Metric) {
		ch <- infoMetric(&c.d, j)
		r := c.readers.Get().(*cgroupfs.Reader)
		defer c.readers.Put(r)
		jr := &jobReader{Files: cgroupfs.NewFiles(r, s.Problem), r: r, s: s, out: collector.NewOut(ch, c.opts.Level), d: &c.d, job: j, usageP: c.opts.Usage,
			devices: c.devices, series: s.Series(j), state: c.state.Job(s, j), now: c.opts.Now}
		defer jr.Close()
		if j.Version == 2 {
			jr.v2()
		} else {
			jr.v1(perCore)
		}
	})
	for _, j := range run.TimedOut {
		c.state.Job(s, j) // still running: keep what it holds
	}
	if run.Complete(len(s.Jobs())) {
		c.state.Sweep(s)
	}
	return s.Context().Err()
}

func infoMetric(d *cgroupDescs, j *discovery.Job) prometheus.Metric {
	m := j.Meta
	return d.info.Gauge(1,
		j.ID, m.User, m.Account, m.Partition, m.QOS, m.Name, m.Cluster, m.ArrayJobID, m.ArrayTaskID, m.SLUID, m.Key,
		cgroupVersion(j), m.Source)
}

func cgroupVersion(j *discovery.Job) string {
	if j.Version == 2 {
		return "2"
	}
	return "1"
}
