package gpu

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/spf13/pflag"

	"github.com/jobscope/jobscope/collector"
	"github.com/jobscope/jobscope/discovery"
	"github.com/jobscope/jobscope/gpu"
)

// Options configure the GPU backend and the GPU-to-job mapping.
type Options struct {
	Backend    string
	MappingDir string
	FakeFile   string
	DCGM       gpu.DCGMOptions
	// Open replaces gpu.Open (tests hand in go-nvml's mock or a fake DCGM).
	Open func(gpu.Config) (gpu.Backend, error)
}

// RegisterFlags adds the --gpu.* flags. cmd registers them and opens the
// backend (Open) before the collectors are built: the gpu and power
// collectors read the GPUs through it, once per scrape.
func RegisterFlags(fs *pflag.FlagSet) *Options {
	o := &Options{}
	fs.StringVar(&o.Backend, "gpu.backend", "auto", "GPU backend: auto (DCGM when built in and reachable, else NVML), nvml, dcgm, fake (a JSON fixture, for demos) or none.")
	fs.StringVar(&o.MappingDir, "gpu.job-mapping-dir", "", "Directory the Slurm prolog writes GPU-to-job files into (dcgm-exporter's HPC format: file named by GPU index, holding the job id); empty to skip.")
	fs.StringVar(&o.FakeFile, "gpu.fake-file", "", "JSON fixture served by --gpu.backend=fake (see testdata/gpu/demo.json).")
	fs.StringVar(&o.DCGM.Address, "gpu.dcgm-address", gpu.DefaultDCGMAddress, "nv-hostengine to connect to (DCGM Standalone mode): host:port, or a unix socket path.")
	fs.BoolVar(&o.DCGM.Profiling, "gpu.dcgm-profiling", true, "Watch DCGM profiling fields (SM/tensor/DRAM/FP activity, PCIe/NVLink bytes). DCGM profiling blocks users' Nsight Compute/Systems sessions; =false reads those metrics from NVML GPM instead (Hopper and later).")
	fs.DurationVar(&o.DCGM.Interval, "gpu.dcgm-watch-interval", time.Second, "How often nv-hostengine samples the fields jobscope watches.")
	return o
}

// Open opens the GPU backend. gpu.ErrNoDevice (no library, driver or
// device) is not a mistake: the gpu collector then says "no data" at each
// scrape. Any other error is a configuration mistake.
func Open(env *collector.Env, o Options) (collector.GPUSource, error) {
	open := o.Open
	if open == nil {
		open = gpu.Open
	}
	cfg := gpu.Config{Backend: o.Backend, FakeFile: o.FakeFile, DCGM: o.DCGM, Logger: env.Logger}
	procfs := env.ProcFS
	if procfs == "" {
		procfs = "/proc"
	}
	b, err := open(cfg)
	if err != nil {
		return nil, err
	}
	return &source{backend: b, mapper: &gpu.Mapper{MappingDir: o.MappingDir, ProcFS: procfs, JobOfCgroupPath: discovery.JobIDFromCgroupPath},
		seen: collector.NewState(gpu.NewEnvSeen)}, nil
}

// source is the node's GPU backend with the GPU-to-job mapping.
type source struct {
	backend gpu.Backend
	mapper  *gpu.Mapper
	// seen keeps, per job, the GPU references its processes' environments
	// gave (each read once), under the one grace rule of per-job state.
	seen *collector.State[gpu.EnvSeen]
}

func (g *source) Name() string { return g.backend.Name() }

func (g *source) Close() error { return g.backend.Close() }

// Read takes one snapshot of every device and maps the devices to jobs.
func (g *source) Read(s *collector.Scrape) (*collector.GPUReading, error) {
	snap, err := g.backend.Snapshot(s.Context())
	if err != nil {
		return nil, fmt.Errorf("gpu %s snapshot: %w", g.backend.Name(), err)
	}
	jobs := s.Jobs()
	mjobs := make([]gpu.Job, 0, len(jobs))
	for _, j := range jobs {
		mj := gpu.Job{ID: j.ID, Env: j.Meta.Env, PIDs: j.PIDs}
		// The mapper updates it under its own lock, which orders
		// overlapping scrapes' readings.
		g.seen.Job(s, j).Do(func(v *gpu.EnvSeen) { mj.Seen = v })
		if j.Version == 1 && j.V1["devices"] != "" {
			mj.DevicesList = filepath.Join(j.V1["devices"], "devices.list")
		}
		mjobs = append(mjobs, mj)
	}
	assign, problems := g.mapper.Map(snap.Devices, mjobs)
	g.seen.Sweep(s)
	return &collector.GPUReading{Snapshot: snap, Assign: assign, Problems: problems}, nil
}
