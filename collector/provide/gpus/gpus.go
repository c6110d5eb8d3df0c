// SPDX-License-Identifier: Apache-2.0

// Package gpus is the provider of the node's GPU backend and its mapping of
// devices to jobs: opened once when the gpu collector is on, owner of the
// --gpu.* flags, read at most once per scrape (Read), so the gpu and power
// collectors see one reading.
package gpus

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/jobscope/jobscope/collector/provide"
	"github.com/jobscope/jobscope/discovery"
	"github.com/jobscope/jobscope/gpu"
	"github.com/jobscope/jobscope/internal/flagval"
)

// Name is the provider's name in a collector's Needs.
const Name = "gpu"

// Options configure the GPU backend and the GPU-to-job mapping.
type Options struct {
	Backend    string
	MappingDir string
	FakeFile   string
	DCGM       gpu.DCGMOptions
	// Open replaces gpu.Open (tests hand in go-nvml's mock or a fake DCGM).
	Open func(gpu.Config) (gpu.Backend, error)
}

// Provider is the node's GPU backend with the GPU-to-job mapping.
type Provider struct {
	Opts    Options
	backend gpu.Backend
	mapper  *gpu.Mapper
	// seen keeps, per job, the GPU references its processes' environments
	// gave (each read once), under the one grace rule of per-job state.
	seen *provide.State[gpu.EnvSeen]
}

// New returns the provider with the flags' defaults.
func New() *Provider {
	return &Provider{Opts: Options{Backend: "auto", DCGM: gpu.DCGMOptions{Address: gpu.DefaultDCGMAddress, Profiling: true, Interval: time.Second}}}
}

// Name implements provide.Provider.
func (p *Provider) Name() string { return Name }

// Flags adds the --gpu.* flags.
func (p *Provider) Flags(fs *pflag.FlagSet) {
	o := &p.Opts
	flagval.Enum(fs, &o.Backend, "gpu.backend", "auto", gpu.Backends, "GPU backend: auto (DCGM when built in and reachable, else NVML), nvml, dcgm, fake (a JSON fixture, for demos) or none.")
	// The prolog creates the mapping directory with the first GPU job.
	flagval.String(fs, &o.MappingDir, "gpu.job-mapping-dir", "", "Directory the Slurm prolog writes GPU-to-job files into (dcgm-exporter's HPC format: file named by GPU index, holding the job id); empty to skip. It may not exist yet (the prolog creates it).", flagval.Optional(flagval.DirLater))
	flagval.String(fs, &o.FakeFile, "gpu.fake-file", "", "JSON fixture served by --gpu.backend=fake (see testdata/gpu/demo.json).", flagval.Optional(flagval.File))
	flagval.String(fs, &o.DCGM.Address, "gpu.dcgm-address", gpu.DefaultDCGMAddress, "nv-hostengine to connect to (DCGM Standalone mode): host:port, host (port 5555), or a unix socket path (/path or unix:///path).", checkDCGMAddress)
	fs.BoolVar(&o.DCGM.Profiling, "gpu.dcgm-profiling", true, "Watch DCGM profiling fields (SM/tensor/DRAM/FP activity, PCIe/NVLink bytes). DCGM profiling blocks users' Nsight Compute/Systems sessions; =false reads those metrics from NVML GPM instead (Hopper and later).")
	flagval.Duration(fs, &o.DCGM.Interval, "gpu.dcgm-watch-interval", time.Second, 1, "How often nv-hostengine samples the fields jobscope watches.")
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

// Start opens the GPU backend. gpu.ErrNoDevice (no library, driver or
// device) is not a mistake: the gpu collector then says "no data" at each
// scrape. Any other error is a configuration mistake.
func (p *Provider) Start(env *provide.Env) error {
	open := p.Opts.Open
	if open == nil {
		open = gpu.Open
	}
	b, err := open(gpu.Config{Backend: p.Opts.Backend, FakeFile: p.Opts.FakeFile, DCGM: p.Opts.DCGM, Logger: env.Logger})
	if err != nil {
		return err
	}
	p.backend = b
	p.mapper = &gpu.Mapper{MappingDir: p.Opts.MappingDir, ProcFS: env.ProcFSOr(), JobOfCgroupPath: discovery.JobIDFromCgroupPath}
	p.seen = provide.NewState(gpu.NewEnvSeen)
	return nil
}

// Close closes the backend.
func (p *Provider) Close() error {
	if p.backend == nil {
		return nil
	}
	return p.backend.Close()
}

// Backend is the backend's name (nvml, dcgm, fake).
func (p *Provider) Backend() string { return p.backend.Name() }

// Reading is one scrape's reading of every GPU.
type Reading struct {
	*gpu.Snapshot
	// Assign maps a device UUID to the job of this scrape that holds it.
	Assign map[string]gpu.Assignment
	// Problems met while mapping (conflicts, bad references).
	Problems []gpu.Problem
}

// Holder returns the job of this scrape holding the device, or "".
func (r *Reading) Holder(uuid string) string {
	if a, ok := r.Assign[uuid]; ok {
		return a.JobID
	}
	return ""
}

type readKey struct{ p *Provider }

type result struct {
	r   *Reading
	err error
}

// Read returns this scrape's GPU reading, taken on the first call of any
// collector.
func (p *Provider) Read(s provide.Scrape) (*Reading, error) {
	res := s.Once(readKey{p}, func() any {
		r, err := p.read(s)
		return result{r, err}
	}).(result)
	return res.r, res.err
}

// read takes one snapshot of every device and maps the devices to jobs.
func (p *Provider) read(s provide.Scrape) (*Reading, error) {
	snap, err := p.backend.Snapshot(s.Context())
	if err != nil {
		return nil, fmt.Errorf("gpu %s snapshot: %w", p.backend.Name(), err)
	}
	jobs := s.Jobs()
	mjobs := make([]gpu.Job, 0, len(jobs))
	for _, j := range jobs {
		mj := gpu.Job{ID: j.ID, Env: j.Meta.Env, PIDs: j.PIDs}
		// The mapper updates it under its own lock, which orders
		// overlapping scrapes' readings.
		p.seen.Job(s, j).Do(func(v *gpu.EnvSeen) { mj.Seen = v })
		if j.Version == 1 && j.V1["devices"] != "" {
			mj.DevicesList = filepath.Join(j.V1["devices"], "devices.list")
		}
		mjobs = append(mjobs, mj)
	}
	assign, problems := p.mapper.Map(snap.Devices, mjobs)
	p.seen.Sweep(s)
	return &Reading{Snapshot: snap, Assign: assign, Problems: problems}, nil
}
