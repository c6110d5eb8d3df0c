//go:build linux

package bpf

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/features"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/rlimit"
	"golang.org/x/sys/unix"
)

// V1 subsystems the programs can key jobs by (values of v1_subsys).
const (
	V1None    = ""
	V1Cpuacct = "cpuacct"
	V1Memory  = "memory"
)

// Config says how to load and attach the programs.
type Config struct {
	// PinPath is the bpffs directory the maps are pinned in ("" pins nothing).
	PinPath string
	// MaxJobs bounds the job counter map; jobs beyond it are counted as
	// overflows.
	MaxJobs uint32
	// V2JobLevel is the depth of job_<id> directories below the v2 root
	// (system.slice/slurmstepd.scope/job_<id> = 3); 0 ignores v2.
	V2JobLevel uint32
	// V1Subsys is the v1 hierarchy jobs are keyed by (V1Cpuacct, V1Memory)
	// and V1JobLevel the depth of job directories in it
	// (slurm[_<node>]/uid_<uid>/job_<id> = 3).
	V1Subsys   string
	V1JobLevel uint32
	// CgroupV2 is the v2 mount the network programs attach to ("" = no
	// network counters).
	CgroupV2 string
	// Stats turns kernel BPF run-time statistics on while loaded.
	Stats bool
	Log   *slog.Logger
}

// Objects are the loaded, attached programs and their maps.
type Objects struct {
	cfg      Config
	maps     jobscopeMaps
	progs    map[string]*ebpf.Program
	links    []link.Link
	stats    io.Closer
	netErr   error
	reused   bool
	possible int
}

// LoadError says why the programs could not be loaded or attached, with a
// short cause an admin can act on.
type LoadError struct {
	Cause string // no_privilege, no_btf, unsupported, verifier, bpffs, load_failed
	Err   error
}

func (e *LoadError) Error() string { return "ebpf " + e.Cause + ": " + e.Err.Error() }
func (e *LoadError) Unwrap() error { return e.Err }

func classify(stage string, err error) *LoadError {
	var ve *ebpf.VerifierError
	switch {
	case errors.Is(err, unix.EPERM), errors.Is(err, os.ErrPermission):
		return &LoadError{"no_privilege", fmt.Errorf("%s: %w (needs root, or CAP_BPF+CAP_PERFMON+CAP_SYS_RESOURCE)", stage, err)}
	case errors.As(err, &ve):
		return &LoadError{"verifier", fmt.Errorf("%s: %w", stage, err)}
	case errors.Is(err, ebpf.ErrNotSupported):
		return &LoadError{"unsupported", fmt.Errorf("%s: %w", stage, err)}
	}
	return &LoadError{"load_failed", fmt.Errorf("%s: %w", stage, err)}
}

// Load loads every program, reuses or pins the maps, seeds running tasks and
// attaches. Network programs that fail leave CPU and IO counting in place
// (NetworkErr says why).
func Load(cfg Config) (*Objects, error) {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.MaxJobs == 0 {
		cfg.MaxJobs = 1024
	}
	if m := missingCaps(); m != "" {
		return nil, &LoadError{"no_privilege", fmt.Errorf("jobscope runs without %s: run it as root", m)}
	}
	if _, err := os.Stat("/sys/kernel/btf/vmlinux"); err != nil {
		return nil, &LoadError{"no_btf", fmt.Errorf("the kernel has no BTF (/sys/kernel/btf/vmlinux: %v); CO-RE programs need CONFIG_DEBUG_INFO_BTF=y", err)}
	}
	// Kernels before 5.11 charge BPF memory to RLIMIT_MEMLOCK. When raising
	// it fails, loading goes on: the load itself then names the real cause.
	memlockErr := rlimit.RemoveMemlock()
	possible, err := ebpf.PossibleCPU()
	if err != nil {
		return nil, classify("load", err)
	}
	if cfg.PinPath != "" {
		if err := EnsurePinDir(cfg.PinPath); err != nil {
			return nil, &LoadError{"bpffs", err}
		}
	}
	o := &Objects{cfg: cfg, progs: map[string]*ebpf.Program{}, possible: possible}
	if err := o.load(); err != nil {
		if memlockErr != nil {
			err.Err = fmt.Errorf("%w (raising RLIMIT_MEMLOCK failed too: %v)", err.Err, memlockErr)
		}
		return nil, err
	}
	if cfg.Stats {
		if c, err := ebpf.EnableStats(uint32(unix.BPF_STATS_RUN_TIME)); err == nil {
			o.stats = c
		} else {
			cfg.Log.Warn("ebpf: kernel BPF statistics could not be enabled", "err", err)
		}
	}
	if err := o.attach(); err != nil {
		o.Close()
		return nil, err
	}
	return o, nil
}

func (o *Objects) spec() (*ebpf.CollectionSpec, error) {
	spec, err := loadJobscope()
	if err != nil {
		return nil, err
	}
	set := func(name string, v uint32) error {
		vs, ok := spec.Variables[name]
		if !ok {
			return fmt.Errorf("variable %s missing from the object", name)
		}
		return vs.Set(v)
	}
	sub := uint32(0)
	switch o.cfg.V1Subsys {
	case V1Cpuacct:
		sub = 1
	case V1Memory:
		sub = 2
	}
	mptcp := uint32(0)
	if features.HaveProgramHelper(ebpf.CGroupSKB, asm.FnSkcToMptcpSock) == nil {
		mptcp = 1
	}
	for name, v := range map[string]uint32{"v2_job_level": o.cfg.V2JobLevel, "v1_job_level": o.cfg.V1JobLevel, "v1_subsys": sub, "have_mptcp": mptcp} {
		if err := set(name, v); err != nil {
			return nil, err
		}
	}
	spec.Maps["job_counters"].MaxEntries = o.cfg.MaxJobs
	if o.cfg.PinPath != "" {
		for _, m := range spec.Maps {
			if m.Name == "job_counters" || m.Name == "task_last" || m.Name == "sock_job" || m.Name == "self_counters" {
				m.Pinning = ebpf.PinByName
			}
		}
	}
	return spec, nil
}

// coreObjects are the programs CPU and IO counting need.
type coreObjects struct {
	AccountSwitch *ebpf.Program `ebpf:"account_switch"`
	SeedTasks     *ebpf.Program `ebpf:"seed_tasks"`
	DropJob       *ebpf.Program `ebpf:"drop_job"`
	jobscopeMaps
}

type netObjects struct {
	TagSocket    *ebpf.Program `ebpf:"tag_socket"`
	TagListener  *ebpf.Program `ebpf:"tag_listener"`
	CountIngress *ebpf.Program `ebpf:"count_ingress"`
	CountEgress  *ebpf.Program `ebpf:"count_egress"`
}

func (o *Objects) load() *LoadError {
	spec, err := o.spec()
	if err != nil {
		return classify("load", err)
	}
	opts := &ebpf.CollectionOptions{Maps: ebpf.MapOptions{PinPath: o.cfg.PinPath}}
	o.reused = o.cfg.PinPath != "" && exists(filepath.Join(o.cfg.PinPath, "job_counters"))
	var core coreObjects
	err = spec.LoadAndAssign(&core, opts)
	if errors.Is(err, ebpf.ErrMapIncompatible) {
		// A build with another map layout or size pinned these: start over.
		o.cfg.Log.Warn("ebpf: pinned maps do not match this build; replacing them (counters restart)", "path", o.cfg.PinPath, "err", err)
		for _, n := range []string{"job_counters", "task_last", "sock_job", "self_counters"} {
			os.Remove(filepath.Join(o.cfg.PinPath, n))
		}
		o.reused = false
		err = spec.LoadAndAssign(&core, opts)
	}
	if err != nil {
		return classify("load", err)
	}
	o.maps = core.jobscopeMaps
	o.progs["account_switch"] = core.AccountSwitch
	o.progs["seed_tasks"] = core.SeedTasks
	o.progs["drop_job"] = core.DropJob
	if o.cfg.CgroupV2 == "" {
		o.netErr = errors.New("no cgroup v2 mount to attach the network programs to")
		return nil
	}
	var net netObjects
	netOpts := &ebpf.CollectionOptions{MapReplacements: map[string]*ebpf.Map{
		"job_counters": o.maps.JobCounters, "task_last": o.maps.TaskLast,
		"sock_job": o.maps.SockJob, "self_counters": o.maps.SelfCounters,
	}}
	if err := spec.LoadAndAssign(&net, netOpts); err != nil {
		o.netErr = classify("load network programs", err)
		return nil
	}
	o.progs["tag_socket"] = net.TagSocket
	o.progs["tag_listener"] = net.TagListener
	o.progs["count_ingress"] = net.CountIngress
	o.progs["count_egress"] = net.CountEgress
	return nil
}

func (o *Objects) attach() error {
	// Seed before attaching: a task forked after the pass starts from zero,
	// which is exact for it; one that ran before keeps its own history out.
	if err := runIter(o.progs["seed_tasks"]); err != nil {
		return classify("seed tasks", err)
	}
	for _, name := range []string{"drop_job", "account_switch"} {
		l, err := link.AttachTracing(link.TracingOptions{Program: o.progs[name]})
		if err != nil {
			return classify("attach "+name, err)
		}
		o.links = append(o.links, l)
	}
	if o.netErr != nil {
		return nil
	}
	var netLinks []link.Link
	attachNet := func() error {
		l, err := link.AttachTracing(link.TracingOptions{Program: o.progs["tag_listener"]})
		if err != nil {
			return classify("attach tag_listener", err)
		}
		netLinks = append(netLinks, l)
		for _, a := range []struct {
			prog string
			typ  ebpf.AttachType
		}{
			{"tag_socket", ebpf.AttachCGroupInetSockCreate},
			{"count_ingress", ebpf.AttachCGroupInetIngress},
			{"count_egress", ebpf.AttachCGroupInetEgress},
		} {
			l, err := link.AttachCgroup(link.CgroupOptions{Path: o.cfg.CgroupV2, Attach: a.typ, Program: o.progs[a.prog]})
			if err != nil {
				return classify("attach "+a.prog, err)
			}
			netLinks = append(netLinks, l)
		}
		return nil
	}
	if err := attachNet(); err != nil {
		for _, l := range netLinks {
			l.Close()
		}
		o.netErr = err
		return nil
	}
	o.links = append(o.links, netLinks...)
	return nil
}

func runIter(p *ebpf.Program) error {
	it, err := link.AttachIter(link.IterOptions{Program: p})
	if err != nil {
		return err
	}
	defer it.Close()
	r, err := it.Open()
	if err != nil {
		return err
	}
	defer r.Close()
	_, err = io.Copy(io.Discard, r)
	return err
}

// NetworkErr says why network counters are off (nil when they are on).
func (o *Objects) NetworkErr() error { return o.netErr }

// Reused reports whether pinned maps of an earlier run were picked up.
func (o *Objects) Reused() bool { return o.reused }

// Attached is the number of attached programs.
func (o *Objects) Attached() int { return len(o.links) }

// Close detaches the programs and closes the maps; pinned maps stay so the
// next run carries the counters on.
func (o *Objects) Close() error {
	var errs []error
	for _, l := range o.links {
		errs = append(errs, l.Close())
	}
	o.links = nil
	for _, p := range o.progs {
		errs = append(errs, p.Close())
	}
	o.progs = map[string]*ebpf.Program{}
	errs = append(errs, o.maps.Close())
	if o.stats != nil {
		errs = append(errs, o.stats.Close())
		o.stats = nil
	}
	return errors.Join(errs...)
}

// Unpin removes the pinned maps (tests; an admin uninstalling).
func Unpin(pinPath string) error {
	var errs []error
	for _, n := range []string{"job_counters", "task_last", "sock_job", "self_counters"} {
		if err := os.Remove(filepath.Join(pinPath, n)); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
