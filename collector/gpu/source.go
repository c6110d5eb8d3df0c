// SPDX-License-Identifier: Apache-2.0

package gpu

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/jobscope/jobscope/collector"
	"github.com/jobscope/jobscope/discovery"
	"github.com/jobscope/jobscope/gpu"
	"github.com/jobscope/jobscope/internal/flagval"
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
	flagval.Enum(fs, &o.Backend, "gpu.backend", "auto", gpu.Backends, "GPU backend: auto (DCGM when built in and reachable, else NVML), nvml, dcgm, fake (a JSON fixture, for demos) or none.")
	// The prolog creates the mapping directory with the first GPU job.
	flagval.String(fs, &o.MappingDir, "gpu.job-mapping-dir", "", "Directory the Slurm prolog writes GPU-to-job files into (dcgm-exporter's HPC format: file named by GPU index, holding the job id); empty to skip. It may not exist yet (the prolog creates it).", flagval.Optional(flagval.DirLater))
	flagval.String(fs, &o.FakeFile, "gpu.fake-file", "", "JSON fixture served by --gpu.backend=fake (see testdata/gpu/demo.json).", flagval.Optional(flagval.File))
	flagval.String(fs, &o.DCGM.Address, "gpu.dcgm-address", gpu.DefaultDCGMAddress, "nv-hostengine to connect to (DCGM Standalone mode): host:port, host (port 5555), or a unix socket path (/path or unix:///path).", checkDCGMAddress)
	fs.BoolVar(&o.DCGM.Profiling, "gpu.dcgm-profiling", true, "Watch DCGM profiling fields (SM/tensor/DRAM/FP activity, PCIe/NVLink bytes). DCGM profiling blocks users' Nsight Compute/Systems sessions; =false reads those metrics from NVML GPM instead (Hopper and later).")
	flagval.Duration(fs, &o.DCGM.Interval, "gpu.dcgm-watch-interval", time.Second, 1, "How often nv-hostengine samples the fields jobscope watches.")
	return o
}

// checkDCGMAddress accepts the addresses gpu's DCGM backend connects to: a
// unix socket by absolute path (with or without unix://), host:port, or a
// host alone. The socket need not exist yet: nv-hostengine may start later.
func checkDCGMAddress(s string) error {
	if p, ok := strings.CutPrefix(s, "unix://"); ok {
		return flagval.Abs(p)
	}
	if strings.HasPrefix(s, "/") {
		return nil
	}
	if strings.Contains(s, ":") {
		return flagval.HostPort(s)
	}
	return flagval.HostPort(s + ":5555")
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
