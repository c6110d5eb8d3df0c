package gpu

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/pflag"

	"github.com/jobscope/jobscope/collector"
	"github.com/jobscope/jobscope/collector/discovery"
	"github.com/jobscope/jobscope/gpu"
	"github.com/jobscope/jobscope/power"
)

// SharedGPUBackend is the Shared key of the node's one GPU backend, for
// collectors that want GPU readings too (power attribution).
const SharedGPUBackend = "gpu.backend"

// Factory describes the gpu collector: NVIDIA GPUs per job, and GPUs
// that belong to no job.
func Factory() collector.Factory {
	return collector.Factory{
		Name:      "gpu",
		Help:      "NVIDIA GPUs and MIG instances per job (NVML or DCGM), and GPUs no job holds",
		DefaultIn: []collector.Mode{collector.ModeNode},
		NeedsJobs: true,
		Descs:     func() []*collector.Desc { return newGPUDescs().all() },
		Flags: func(fs *pflag.FlagSet) func(env *collector.Env) (collector.Collector, error) {
			o := GPUOptions{}
			fs.StringVar(&o.Backend, "gpu.backend", "auto", "GPU backend: auto (DCGM when built in and reachable, else NVML), nvml, dcgm, fake (a JSON fixture, for demos) or none.")
			fs.StringVar(&o.MappingDir, "gpu.job-mapping-dir", "", "Directory the Slurm prolog writes GPU-to-job files into (dcgm-exporter's HPC format: file named by GPU index, holding the job id); empty to skip.")
			fs.StringVar(&o.FakeFile, "gpu.fake-file", "", "JSON fixture served by --gpu.backend=fake (see testdata/gpu/demo.json).")
			fs.StringVar(&o.DCGM.Address, "gpu.dcgm-address", gpu.DefaultDCGMAddress, "nv-hostengine to connect to (DCGM Standalone mode): host:port, or a unix socket path.")
			fs.BoolVar(&o.DCGM.Profiling, "gpu.dcgm-profiling", true, "Watch DCGM profiling fields (SM/tensor/DRAM/FP activity, PCIe/NVLink bytes). DCGM profiling blocks users' Nsight Compute/Systems sessions; =false reads those metrics from NVML GPM instead (Hopper and later).")
			fs.DurationVar(&o.DCGM.Interval, "gpu.dcgm-watch-interval", time.Second, "How often nv-hostengine samples the fields jobscope watches.")
			return func(env *collector.Env) (collector.Collector, error) { return NewGPUCollector(env, o) }
		},
	}
}

// GPUOptions configure the gpu collector.
type GPUOptions struct {
	Backend    string
	MappingDir string
	FakeFile   string
	DCGM       gpu.DCGMOptions
	// Open replaces gpu.Open (tests hand in go-nvml's mock or a fake DCGM).
	Open func(gpu.Config) (gpu.Backend, error)
}

type gpuCollector struct {
	backend gpu.Backend
	openErr error // why there is no backend (no driver: each scrape says no data)
	mapper  *gpu.Mapper
	d       gpuDescs
	pairs   *collector.PairCache
	energy  *gpuEnergy // shared with the power collector

	mu      sync.Mutex
	xidJob  map[xidKey]*xidCount // Xid counts per job GPU, dropped when the job ends
	xidNode map[xidKey]float64   // Xid counts of GPUs no job held
}

type xidKey struct {
	job, uuid string
	xid       uint64
}

type xidCount struct {
	n      float64
	labels []string // device labels when last seen
}

// NewGPUCollector opens (or shares) the GPU backend. A node without a
// GPU library or driver still gets a collector: each scrape then reports
// success 0 with one log line in all.
func NewGPUCollector(env *collector.Env, o GPUOptions) (collector.Collector, error) {
	open := o.Open
	if open == nil {
		open = gpu.Open
	}
	cfg := gpu.Config{Backend: o.Backend, FakeFile: o.FakeFile, DCGM: o.DCGM}
	procfs := "/proc"
	if env != nil {
		cfg.Logger = env.Logger
		if env.ProcFS != "" {
			procfs = env.ProcFS
		}
	}
	c := &gpuCollector{
		mapper:  &gpu.Mapper{MappingDir: o.MappingDir, ProcFS: procfs, JobOfCgroupPath: discovery.JobIDFromCgroupPath},
		d:       newGPUDescs(),
		pairs:   collector.NewPairCache(),
		xidJob:  map[xidKey]*xidCount{},
		xidNode: map[xidKey]float64{},
		energy:  &gpuEnergy{},
	}
	build := func() (any, error) { return open(cfg) }
	var b any
	var err error
	if env != nil && env.Shared != nil {
		b, err = env.Shared.Get(SharedGPUBackend, build)
	} else {
		b, err = build()
	}
	switch {
	case err == nil:
		c.backend = b.(gpu.Backend)
		if env != nil && env.Shared != nil {
			env.Shared.Set(power.GPUEnergyKey, c.energy)
		}
	case errors.Is(err, gpu.ErrNoDevice):
		c.openErr = err
	default:
		return nil, err // a configuration mistake: say so at start-up
	}
	return c, nil
}

func (c *gpuCollector) Collect(s *collector.Scrape, ch chan<- prometheus.Metric) error {
	if c.backend == nil {
		return fmt.Errorf("%w: %v", collector.ErrNoData, c.openErr)
	}
	snap, err := c.backend.Snapshot(s.Context())
	if err != nil {
		// No reading now: the power collector must not attribute an old one.
		if c.energy != nil {
			c.energy.update(nil, nil)
		}
		return fmt.Errorf("gpu %s snapshot: %w", c.backend.Name(), err)
	}
	for _, e := range snap.Errors {
		s.Problem(c.backend.Name()+"_"+e.Call, e)
	}
	jobs := s.Jobs()
	byID := make(map[string]*discovery.Job, len(jobs))
	mjobs := make([]gpu.Job, 0, len(jobs))
	for _, j := range jobs {
		byID[j.ID] = j
		mj := gpu.Job{ID: j.ID, Env: j.Meta.Env, PIDs: j.PIDs}
		if j.Version == 1 && j.V1["devices"] != "" {
			mj.DevicesList = filepath.Join(j.V1["devices"], "devices.list")
		}
		mjobs = append(mjobs, mj)
	}
	assign, problems := c.mapper.Map(snap.Devices, mjobs)
	for _, p := range problems {
		s.Problem(p.Cause, p.Err)
	}

	byUUID := make(map[string]*gpu.Device, len(snap.Devices))
	for i := range snap.Devices {
		d := &snap.Devices[i]
		byUUID[d.UUID] = d
		dl := deviceLabelValues(d)
		ch <- c.d.nodeInfo.Gauge(1, append(dl, c.backend.Name())...)
		a, held := assign[d.UUID]
		if j := byID[a.JobID]; held && j != nil {
			series := c.pairs.Job(j)
			ch <- series.Gauge(c.d.jobInfo, 1, append(dl, string(a.Method))...)
			c.emitFields(ch, c.d.job, d, series.Metric)
		} else {
			c.emitFields(ch, c.d.node, d, func(desc *collector.Desc, t prometheus.ValueType, v float64, lv ...string) prometheus.Metric {
				return desc.Metric(t, v, lv...)
			})
		}
	}
	c.energy.update(snap.Devices, func(uuid string) string {
		if a, ok := assign[uuid]; ok && byID[a.JobID] != nil {
			return a.JobID
		}
		return ""
	})
	c.collectXid(ch, snap.Xid, snap.Devices, byUUID, assign, byID)
	return nil
}

// emitFields emits a device's values through metric, which adds the job
// labels (a job's GPU) or not (a GPU no job holds).
func (c *gpuCollector) emitFields(ch chan<- prometheus.Metric, descs map[string]*collector.Desc, d *gpu.Device,
	metric func(desc *collector.Desc, t prometheus.ValueType, v float64, lv ...string) prometheus.Metric) {
	dl := deviceLabelValues(d)
	for _, spec := range gpuFieldSpecs {
		v, ok := d.Values[spec.field]
		if !ok {
			continue
		}
		lv := dl
		if spec.label != "" {
			lv = append(append(make([]string, 0, len(dl)+1), dl...), spec.value)
		}
		ch <- metric(descs[spec.name], spec.typ, v, lv...)
	}
}

// deviceLabelValues matches gpuDeviceLabels.
func deviceLabelValues(d *gpu.Device) []string {
	idx := strconv.Itoa(d.Index)
	if d.IsMIG() {
		return []string{idx, d.ParentUUID, d.Model, d.UUID}
	}
	return []string{idx, d.UUID, d.Model, ""}
}

// collectXid attributes new Xid events to the job that holds the device
// now, keeps the counts, and emits them. Counts of ended jobs are dropped.
func (c *gpuCollector) collectXid(ch chan<- prometheus.Metric, events []gpu.XidEvent, devs []gpu.Device,
	byUUID map[string]*gpu.Device, assign map[string]gpu.Assignment, byID map[string]*discovery.Job) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, ev := range events {
		d := byUUID[ev.UUID]
		if ev.GPUInstanceID >= 0 {
			for i := range devs {
				if devs[i].ParentUUID == ev.UUID && devs[i].GPUInstanceID == ev.GPUInstanceID {
					d = &devs[i]
					break
				}
			}
		}
		if d == nil {
			continue // a device that vanished since the event
		}
		a, held := assign[d.UUID]
		if j := byID[a.JobID]; held && j != nil {
			k := xidKey{job: j.ID, uuid: d.UUID, xid: ev.Xid}
			xc := c.xidJob[k]
			if xc == nil {
				xc = &xidCount{}
				c.xidJob[k] = xc
			}
			xc.n++
			xc.labels = deviceLabelValues(d)
		} else {
			c.xidNode[xidKey{uuid: d.UUID, xid: ev.Xid}]++
		}
	}
	for k, xc := range c.xidJob {
		if byID[k.job] == nil {
			delete(c.xidJob, k)
			continue
		}
		ch <- c.pairs.Job(byID[k.job]).Counter(c.d.jobXid, xc.n, append(xc.labels, strconv.FormatUint(k.xid, 10))...)
	}
	for k, n := range c.xidNode {
		d := byUUID[k.uuid]
		if d == nil {
			continue // the device is gone; its count comes back if it does
		}
		ch <- c.d.nodeXid.Counter(n, append(deviceLabelValues(d), strconv.FormatUint(k.xid, 10))...)
	}
}
