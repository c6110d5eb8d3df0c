package collector

import (
	"runtime"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/pflag"

	"github.com/jobscope/jobscope/collector/cgroupfs"
	"github.com/jobscope/jobscope/collector/discovery"
)

// CgroupFactory describes the cgroup collector: memory, CPU, pressure,
// block IO and pids of each job, from its job-level cgroup.
func CgroupFactory() Factory {
	return Factory{
		Name:      "cgroup",
		Help:      "Per-job memory, CPU, throttling, pressure, block IO and pids from cgroupfs",
		DefaultIn: []Mode{ModeNode},
		NeedsJobs: true,
		Descs:     func() []*prometheus.Desc { return DescsOf(newCgroupDescs()) },
		Flags: func(fs *pflag.FlagSet) func(env *Env) (Collector, error) {
			workers := fs.Int("collector.cgroup.workers", 0, "Jobs read in parallel by the cgroup collector (0: number of CPUs, at most 4).")
			return func(env *Env) (Collector, error) {
				return NewCgroupCollector(CgroupOptions{Workers: *workers, SysFS: env.SysFS, PerCoreFromEBPF: perCoreFromEBPF(env)}), nil
			}
		},
	}
}

// CgroupOptions configure the cgroup collector.
type CgroupOptions struct {
	Workers int
	SysFS   string // for block device names
	// Fault, when set, is asked before each open (tests fake permission
	// errors and vanishing cgroups).
	Fault func(path string) error
	// PerCoreFromEBPF, when it returns true, leaves slurm_job_cpu_core_seconds_total
	// to the ebpf collector so one node has one source for it.
	PerCoreFromEBPF func() bool
}

// perCoreFromEBPF reads the flag the ebpf collector sets once it is loaded.
func perCoreFromEBPF(env *Env) func() bool {
	return func() bool {
		if env == nil || env.Shared == nil {
			return false
		}
		v, ok := env.Shared.Lookup(SharedEBPFPerCore)
		b, _ := v.(bool)
		return ok && b
	}
}

// SharedEBPFPerCore is the Shared key under which the ebpf collector says
// (true) that it provides per-core CPU seconds.
const SharedEBPFPerCore = "ebpf.percore"

type cgroupCollector struct {
	opts    CgroupOptions
	d       cgroupDescs
	devices *deviceNames
	pairs   *pairCache
	static  *staticFiles
	events  *v1Events
	readers sync.Pool
}

// NewCgroupCollector builds the collector.
func NewCgroupCollector(opts CgroupOptions) Collector {
	if opts.Workers <= 0 {
		opts.Workers = min(runtime.NumCPU(), 4)
	}
	if opts.SysFS == "" {
		opts.SysFS = "/sys"
	}
	c := &cgroupCollector{opts: opts, d: newCgroupDescs(), devices: newDeviceNames(opts.SysFS), pairs: newPairCache(),
		static: newStaticFiles(time.Now), events: newV1Events()}
	c.readers.New = func() any {
		if opts.Fault != nil {
			return cgroupfs.NewReaderWithFault(opts.Fault)
		}
		return cgroupfs.NewReader()
	}
	return c
}

func (c *cgroupCollector) Collect(s *Scrape, ch chan<- prometheus.Metric) error {
	jobs := s.Jobs()
	perCore := c.opts.PerCoreFromEBPF == nil || !c.opts.PerCoreFromEBPF()
	work := make(chan *discovery.Job)
	var wg sync.WaitGroup
	for range min(c.opts.Workers, max(len(jobs), 1)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := c.readers.Get().(*cgroupfs.Reader)
			defer c.readers.Put(r)
			for j := range work {
				jr := &jobReader{r: r, s: s, ch: ch, d: &c.d, job: j, devices: c.devices,
					series: newJobSeries(j.Labels(), c.pairs), static: c.static, events: c.events}
				if j.Version == 2 {
					jr.v2()
				} else {
					jr.v1(perCore)
				}
				jr.close()
			}
		}()
	}
	for _, j := range jobs {
		if s.Context().Err() != nil {
			break
		}
		ch <- infoMetric(&c.d, j)
		work <- j
	}
	close(work)
	wg.Wait()
	c.static.endScrape()
	c.events.endScrape()
	return s.Context().Err()
}

func infoMetric(d *cgroupDescs, j *discovery.Job) prometheus.Metric {
	m := j.Meta
	return prometheus.MustNewConstMetric(d.info, prometheus.GaugeValue, 1,
		j.ID, m.User, m.Account, m.Partition, m.QOS, m.Name, m.Cluster, m.ArrayJobID, m.ArrayTaskID, m.SLUID, m.Key,
		cgroupVersion(j), m.Source)
}

func cgroupVersion(j *discovery.Job) string {
	if j.Version == 2 {
		return "2"
	}
	return "1"
}
