// SPDX-License-Identifier: Apache-2.0

//go:build linux

package bpf

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/features"
	"github.com/cilium/ebpf/link"
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
	// V2JobLevel is the depth of job directories below the v2 root
	// (system.slice/slurmstepd.scope/job_<id> or /<SLUID> = 3); 0 ignores v2.
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
	// Features answers what the kernel supports (nil: probe it).
	Features Features
	Log      *slog.Logger
}

// Objects are the loaded, attached programs and their maps.
type Objects struct {
	cfg     Config
	maps    jobscopeMaps
	progs   map[string]*ebpf.Program
	links   []link.Link
	fold    *link.Iter // fold_running, run before each read (nil: not loaded)
	liveErr error
	stats   io.Closer
	netErr  error
	reused  bool
	resume  bool // seed_tasks resumes the pinned task storage (resume_tasks)
	// handedOver counts the hooks whose pinned link of a previous run this
	// run took over (links.go).
	handedOver int
	possible   int
}

// Load loads every program the kernel supports, reuses or pins the maps,
// seeds running tasks and attaches. Without task storage or BTF it loads
// nothing and says what is lost; without what fold_running needs, or when
// the network programs fail, CPU and IO counting stay (LiveErr, NetworkErr).
func Load(cfg Config) (*Objects, error) {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.MaxJobs == 0 {
		cfg.MaxJobs = 1024
	}
	if cfg.Features == nil {
		cfg.Features = kernelFeatures{}
	}
	if m := missingCaps(); m != "" {
		return nil, &LoadError{"no_privilege", fmt.Errorf("jobscope runs without %s: run it as root", m)}
	}
	if err := cfg.Features.BTF(); err != nil {
		return nil, &LoadError{"no_btf", fmt.Errorf("%w; %s", err, lostAll)}
	}
	// Kernels before 5.11 charge BPF memory to RLIMIT_MEMLOCK. When raising
	// it fails, loading goes on: the load itself then names the real cause.
	memlockErr := raiseMemlock()
	if err := cfg.Features.TaskStorage(); err != nil {
		return nil, &LoadError{"unsupported", fmt.Errorf("%w; %s", err, lostAll)}
	}
	possible, err := ebpf.PossibleCPU()
	if err != nil {
		return nil, classify("load", err)
	}
	if cfg.PinPath != "" {
		if err := EnsurePinDir(cfg.PinPath); err != nil {
			if le := pinOwnerError(cfg.PinPath, err); le != nil {
				return nil, le
			}
			return nil, &LoadError{"bpffs", err}
		}
	}
	o := &Objects{cfg: cfg, progs: map[string]*ebpf.Program{}, possible: possible}
	if err := o.load(); err != nil {
		o.Close()
		// The kernel's own error, without classify's guess at privileges.
		if le := pinOwnerError(cfg.PinPath, errors.Unwrap(err.Err)); le != nil {
			return nil, le
		}
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
	for name, v := range map[string]uint32{jobscopeVarV2JobLevel: o.cfg.V2JobLevel, jobscopeVarV1JobLevel: o.cfg.V1JobLevel,
		jobscopeVarV1Subsys: sub, jobscopeVarHaveMptcp: mptcp} {
		vs, ok := spec.Variables[name]
		if !ok {
			return nil, fmt.Errorf("variable %s missing from the object", name)
		}
		if err := vs.Set(v); err != nil {
			return nil, err
		}
	}
	spec.Maps[jobscopeMapJobCounters].MaxEntries = o.cfg.MaxJobs
	if o.cfg.PinPath != "" {
		for _, m := range spec.Maps {
			if pinned(m.Name) {
				m.Pinning = ebpf.PinByName
			}
		}
	}
	return spec, nil
}

func (o *Objects) load() *LoadError {
	spec, err := o.spec()
	if err != nil {
		return classify("load", err)
	}
	mc, err := o.loadMaps(spec)
	if err != nil {
		return classify("load maps", err)
	}
	// Every group of programs gets these maps. Assign hands the named maps
	// to o.maps; closing mc then drops only its hold on the data sections,
	// which the programs keep alive.
	defer mc.Close()
	repl := maps.Clone(mc.Maps)
	if err := mc.Assign(&o.maps); err != nil {
		return classify("load maps", err)
	}
	// Groups are loaded one by one so that a kernel refusing one keeps the
	// others.
	group := func(names ...string) error {
		progs, err := loadPrograms(spec, repl, names...)
		maps.Copy(o.progs, progs)
		return err
	}

	if err := group(jobscopeProgSeedTasks, jobscopeProgDropJob); err != nil {
		return classify("load", err)
	}
	o.liveErr = o.cfg.Features.LiveCPU()
	if o.liveErr == nil {
		if err := group(jobscopeProgAccountSwitch, jobscopeProgFoldRunning); err != nil {
			o.liveErr = classify("load account_switch and fold_running", err)
		}
	}
	if o.liveErr != nil {
		o.liveErr = fmt.Errorf("%w; %s", o.liveErr, lostLive)
		if err := group(jobscopeProgAccountSwitchPlain); err != nil {
			return classify("load", err)
		}
	}
	if o.cfg.CgroupV2 == "" {
		o.netErr = errors.New("no cgroup v2 mount to attach the network programs to")
		return nil
	}
	if err := group(netPrograms...); err != nil {
		o.netErr = classify("load network programs", err)
	}
	return nil
}

// loadPrograms loads the named programs of spec against the given maps.
func loadPrograms(spec *ebpf.CollectionSpec, repl map[string]*ebpf.Map, names ...string) (map[string]*ebpf.Program, error) {
	sub := &ebpf.CollectionSpec{Maps: spec.Maps, Programs: map[string]*ebpf.ProgramSpec{},
		Variables: spec.Variables, Types: spec.Types, ByteOrder: spec.ByteOrder}
	for _, n := range names {
		sub.Programs[n] = spec.Programs[n]
	}
	coll, err := ebpf.NewCollectionWithOptions(sub, ebpf.CollectionOptions{MapReplacements: repl})
	if err != nil {
		return nil, err
	}
	progs := coll.Programs
	coll.Programs = nil
	coll.Close()
	return progs, nil
}

var netPrograms = []string{jobscopeProgTagSocket, jobscopeProgTagListener, jobscopeProgCountIngress, jobscopeProgCountEgress}

// loadMaps creates the maps alone (pinned ones opened or pinned), replacing
// pins of another layout.
func (o *Objects) loadMaps(spec *ebpf.CollectionSpec) (*ebpf.Collection, error) {
	ms := &ebpf.CollectionSpec{Maps: spec.Maps, Variables: spec.Variables, Types: spec.Types, ByteOrder: spec.ByteOrder}
	opts := ebpf.CollectionOptions{Maps: ebpf.MapOptions{PinPath: o.cfg.PinPath}}
	o.reused = o.cfg.PinPath != "" && exists(filepath.Join(o.cfg.PinPath, jobscopeMapJobCounters))
	o.resume = resumable(o.cfg.PinPath)
	if err := setResume(spec, o.resume); err != nil {
		return nil, err
	}
	coll, err := ebpf.NewCollectionWithOptions(ms, opts)
	if errors.Is(err, ebpf.ErrMapIncompatible) {
		// A build with another map layout or size pinned these: start over.
		o.cfg.Log.Warn("ebpf: pinned maps do not match this build; replacing them (counters restart)", "path", o.cfg.PinPath, "err", err)
		if err := Unpin(o.cfg.PinPath); err != nil {
			return nil, err
		}
		o.reused, o.resume = false, false
		if err := setResume(spec, false); err != nil {
			return nil, err
		}
		coll, err = ebpf.NewCollectionWithOptions(ms, opts)
	}
	return coll, err
}

func (o *Objects) attach() error {
	// Seed before attaching: a task forked after the pass starts from zero,
	// which is exact for it; one that ran before keeps its own history out,
	// unless it was forked while a previous run's storage went unattended.
	before, errBefore := seededTasks(o.maps.SelfCounters)
	if err := runIter(o.progs[jobscopeProgSeedTasks]); err != nil {
		return classify("seed tasks", err)
	}
	if o.resume {
		args := []any{"path", o.cfg.PinPath}
		if after, err := seededTasks(o.maps.SelfCounters); err == nil && errBefore == nil {
			args = append(args, "tasks_from_start", after-before)
		}
		o.cfg.Log.Info("ebpf: resumed the pinned per-task baselines; tasks forked while jobscope was down are counted from their start", args...)
	}
	switchProg := jobscopeProgAccountSwitch
	if o.liveErr != nil {
		switchProg = jobscopeProgAccountSwitchPlain
	}
	attached := map[string]bool{}
	for _, h := range []struct{ hook, prog string }{{hookCgroupRmdir, jobscopeProgDropJob}, {hookSchedSwitch, switchProg}} {
		p := o.progs[h.prog]
		l, err := o.handover(h.hook, p, func() (link.Link, error) { return link.AttachTracing(link.TracingOptions{Program: p}) })
		if err != nil {
			return classify("attach "+h.prog, err)
		}
		o.links = append(o.links, l)
		attached[h.hook] = true
	}
	if p := o.progs[jobscopeProgFoldRunning]; p != nil {
		it, err := link.AttachIter(link.IterOptions{Program: p})
		if err != nil {
			return classify("attach fold_running", err)
		}
		o.fold = it
		o.links = append(o.links, it)
	}
	if o.netErr == nil && o.attachNetwork() {
		for _, h := range []string{hookListen, hookSockCreate, hookSkbIngress, hookSkbEgress} {
			attached[h] = true
		}
	}
	o.dropUnused(attached)
	if o.handedOver > 0 {
		o.cfg.Log.Info("ebpf: took over the programs a previous run left attached; nothing went uncounted while jobscope was down",
			"path", o.cfg.PinPath, "hooks", o.handedOver)
	}
	return nil
}

// attachNetwork attaches the network programs and says whether it did. A
// failure leaves the CPU and IO accounting working and is kept as the
// network error.
func (o *Objects) attachNetwork() bool {
	var netLinks []link.Link
	attachNet := func() error {
		p := o.progs[jobscopeProgTagListener]
		l, err := o.handover(hookListen, p, func() (link.Link, error) { return link.AttachTracing(link.TracingOptions{Program: p}) })
		if err != nil {
			return classify("attach "+jobscopeProgTagListener, err)
		}
		netLinks = append(netLinks, l)
		for _, a := range []struct {
			hook, prog string
			typ        ebpf.AttachType
		}{
			{hookSockCreate, jobscopeProgTagSocket, ebpf.AttachCGroupInetSockCreate},
			{hookSkbIngress, jobscopeProgCountIngress, ebpf.AttachCGroupInetIngress},
			{hookSkbEgress, jobscopeProgCountEgress, ebpf.AttachCGroupInetEgress},
		} {
			p := o.progs[a.prog]
			l, err := o.handover(a.hook, p, func() (link.Link, error) {
				return link.AttachCgroup(link.CgroupOptions{Path: o.cfg.CgroupV2, Attach: a.typ, Program: p})
			})
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
		return false
	}
	o.links = append(o.links, netLinks...)
	return true
}

func runIter(p *ebpf.Program) error {
	it, err := link.AttachIter(link.IterOptions{Program: p})
	if err != nil {
		return err
	}
	defer it.Close()
	return drain(it)
}

// drain runs an attached iterator once.
func drain(it *link.Iter) error {
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

// LiveErr says why the running slice of a task is not counted at each read
// (nil when it is), and so why CPU time is folded in at switch-out only.
func (o *Objects) LiveErr() error { return o.liveErr }

// Reused reports whether pinned maps of an earlier run were picked up.
func (o *Objects) Reused() bool { return o.reused }

// Attached is the number of attached programs.
func (o *Objects) Attached() int { return len(o.links) }

// HandedOver is the number of hooks whose programs a previous run left
// attached (pinned links) and this run took over without a gap.
func (o *Objects) HandedOver() int { return o.handedOver }

// Close releases this process's hold on the programs and maps. With a pin
// path, the links and maps stay pinned: the programs go on counting while
// jobscope is down, and the next run takes them over (links.go); Detach
// stops them. Without one, the programs are detached.
func (o *Objects) Close() error {
	var errs []error
	for _, l := range o.links {
		errs = append(errs, l.Close())
	}
	o.links, o.fold = nil, nil
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

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
