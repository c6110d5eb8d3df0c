// SPDX-License-Identifier: Apache-2.0

// Package ebpfprogs is the provider of the node's eBPF programs: loaded
// once when the ebpf collector is on, owner of the --bpf.* flags. The ebpf
// collector reads their maps; the cgroup and process collectors leave
// per-core CPU and per-process IO to them when they are loaded.
package ebpfprogs

import (
	"fmt"
	"log/slog"
	"path/filepath"

	"github.com/spf13/pflag"

	"github.com/jobscope/jobscope/bpf"
	"github.com/jobscope/jobscope/collector/provide"
	"github.com/jobscope/jobscope/discovery"
	"github.com/jobscope/jobscope/internal/flagval"
)

// Name is the provider's name in a collector's Needs.
const Name = "bpf"

// Options configure the eBPF programs.
type Options struct {
	PinPath      string
	MaxJobs      uint32
	Stats        bool
	Network      bool
	V1Controller string
	// Features answers what the kernel supports (nil: probe it); tests
	// force a kernel without a feature.
	Features bpf.Features
}

// Provider loads the programs and hands out their maps.
type Provider struct {
	Opts Options
	// Reader reads the maps; Key gives a job's map key (false: the job has
	// no directory in a hierarchy the programs key by, or it vanished).
	// Both are set by Start.
	Reader bpf.Reader
	Key    func(j *discovery.Job) (bpf.Key, bool)
	close  func() error
}

// New returns the provider with the flags' defaults.
func New() *Provider {
	return &Provider{Opts: Options{PinPath: "/sys/fs/bpf/jobscope", MaxJobs: 1024, Network: true, V1Controller: "cpuacct"}}
}

// Name implements provide.Provider.
func (p *Provider) Name() string { return Name }

// Flags adds the --bpf.* flags.
func (p *Provider) Flags(fs *pflag.FlagSet) {
	o := &p.Opts
	flagval.String(fs, &o.PinPath, "bpf.pin-path", "/sys/fs/bpf/jobscope", "bpffs directory the ebpf collector pins its maps and links in: the programs stay attached while jobscope restarts or is upgraded, and the counters carry on (\"\" pins nothing and detaches at exit); an absolute path, created when missing. bpffs is mounted at /sys/fs/bpf if nothing is mounted there.", flagval.Optional(flagval.Abs))
	fs.Uint32Var(&o.MaxJobs, "bpf.max-jobs", 1024, "Job cgroups the ebpf counter map holds; more are counted in jobscope_bpf_map_overflows_total.")
	fs.BoolVar(&o.Stats, "bpf.stats", false, "Turn on the kernel's BPF run-time statistics (kernel.bpf_stats_enabled, ~20 ns per program run) for jobscope_bpf_program_* metrics.")
	fs.BoolVar(&o.Network, "bpf.network", true, "Count job network traffic (cgroup_skb programs on the cgroup v2 root).")
	flagval.Enum(fs, &o.V1Controller, "bpf.v1-controller", "cpuacct", []string{"cpuacct", "memory"}, "cgroup v1 hierarchy that keys jobs on v1 and hybrid hosts (cpuacct or memory; the other is used when it is not mounted).")
}

// Start loads and attaches the programs for the node's cgroup layout. Any
// failure (no root, no BTF, a verifier rejection) is returned.
func (p *Provider) Start(env *provide.Env) error {
	o := p.Opts
	layout := env.Layout
	v1 := ""
	for _, c := range []string{o.V1Controller, bpf.V1Cpuacct, bpf.V1Memory} {
		if (c == bpf.V1Cpuacct || c == bpf.V1Memory) && layout.V1[c] != "" {
			v1 = c
			break
		}
	}
	var hier uint32
	if v1 != "" {
		h, err := bpf.V1Hierarchy(env.ProcFSOr(), v1)
		if err != nil {
			return fmt.Errorf("v1 hierarchy of %s: %w", v1, err)
		}
		hier = h
	}
	cfg := bpf.Config{PinPath: o.PinPath, MaxJobs: o.MaxJobs, V1Subsys: v1, V1JobLevel: 3, Stats: o.Stats, Features: o.Features, Log: env.Logger}
	if layout.V2 != "" {
		// system.slice/[<node>_]slurmstepd.scope/{job_<id>,<SLUID>}.
		cfg.V2JobLevel = 3
		if o.Network {
			cfg.CgroupV2 = layout.V2
		}
	}
	objs, err := bpf.Load(cfg)
	if err != nil {
		return err
	}
	if env.Logger != nil {
		args := []any{"v2", layout.V2, "v1_controller", v1, "pinned", o.PinPath, "reused_pins", objs.Reused(), "programs", objs.Attached()}
		if nerr := objs.NetworkErr(); nerr != nil {
			args = append(args, "network", nerr.Error())
		}
		if n := objs.HandedOver(); n > 0 {
			args = append(args, "handed_over", n)
		}
		env.Logger.Info("ebpf collector loaded", args...)
		if lerr := objs.LiveErr(); lerr != nil {
			env.Logger.Warn("ebpf: CPU time is counted at switch-out only", "cause", lerr.Error())
		}
	}
	p.Reader, p.Key, p.close = objs, dirKeys(v1, hier), objs.Close
	return nil
}

// Close lets go of the programs. With a pin path their links and maps stay
// pinned, so the programs count on while jobscope restarts or is upgraded
// and the next run takes them over; without one they are detached.
func (p *Provider) Close() error {
	if p.close == nil {
		return nil
	}
	return p.close()
}

// dirKeys keys v2 jobs by their directory's inode and v1 jobs by the inode
// of their directory in the chosen hierarchy.
func dirKeys(v1 string, hier uint32) func(j *discovery.Job) (bpf.Key, bool) {
	return func(j *discovery.Job) (bpf.Key, bool) {
		dir, h := j.Dir, uint32(0)
		if j.Version == 1 {
			dir, h = j.V1[v1], hier
		}
		if dir == "" || (j.Version == 1 && v1 == "") {
			return bpf.Key{}, false
		}
		k, err := bpf.DirKey(h, filepath.Clean(dir))
		return k, err == nil
	}
}

// DetachUnused detaches the programs a previous run left attached under
// the pin path, for a node run that does not load them (the ebpf collector
// turned off): with no reader they would only cost every context switch.
func (p *Provider) DetachUnused(logger *slog.Logger) {
	hooks := bpf.PinnedLinks(p.Opts.PinPath)
	if p.Opts.PinPath == "" || len(hooks) == 0 {
		return
	}
	if err := bpf.Detach(p.Opts.PinPath); err != nil {
		logger.Warn("ebpf collector off: could not detach the programs a previous run left attached", "path", p.Opts.PinPath, "err", err)
		return
	}
	logger.Info("ebpf collector off: detached the programs a previous run left attached", "path", p.Opts.PinPath, "hooks", len(hooks))
}
