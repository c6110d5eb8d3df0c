// SPDX-License-Identifier: Apache-2.0

package ebpf

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/pflag"

	"github.com/jobscope/jobscope/bpf"
	"github.com/jobscope/jobscope/collector"
	"github.com/jobscope/jobscope/discovery"
	"github.com/jobscope/jobscope/internal/flagval"
)

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

// RegisterFlags adds the --bpf.* flags. cmd registers them and loads the
// programs (Load) before the collectors are built: the cgroup and process
// collectors need to know whether they are loaded.
func RegisterFlags(fs *pflag.FlagSet) *Options {
	o := &Options{}
	flagval.String(fs, &o.PinPath, "bpf.pin-path", "/sys/fs/bpf/jobscope", "bpffs directory the ebpf collector pins its maps in, so a restart carries the counters on (\"\" pins nothing); an absolute path, created when missing. bpffs is mounted at /sys/fs/bpf if nothing is mounted there.", flagval.Optional(flagval.Abs))
	fs.Uint32Var(&o.MaxJobs, "bpf.max-jobs", 1024, "Job cgroups the ebpf counter map holds; more are counted in jobscope_bpf_map_overflows_total.")
	fs.BoolVar(&o.Stats, "bpf.stats", false, "Turn on the kernel's BPF run-time statistics (kernel.bpf_stats_enabled, ~20 ns per program run) for jobscope_bpf_program_* metrics.")
	fs.BoolVar(&o.Network, "bpf.network", true, "Count job network traffic (cgroup_skb programs on the cgroup v2 root).")
	flagval.Enum(fs, &o.V1Controller, "bpf.v1-controller", "cpuacct", []string{"cpuacct", "memory"}, "cgroup v1 hierarchy that keys jobs on v1 and hybrid hosts (cpuacct or memory; the other is used when it is not mounted).")
	return o
}

// Factory describes the ebpf collector. Its programs are loaded by cmd
// (Load) and reach it on Env.BPF.
func Factory() collector.Factory {
	return collector.Factory{
		Name:      "ebpf",
		Help:      "Per-job CPU time per core, IO and network counters from CO-RE eBPF programs (needs root and kernel BTF)",
		DefaultIn: []collector.Mode{collector.ModeNode},
		NeedsJobs: true,
		Descs:     func() []*collector.Desc { return collector.DescsOf(newEBPFDescs()) },
		Flags:     func(*pflag.FlagSet) func(env *collector.Env) (collector.Collector, error) { return New },
	}
}

// ebpfCollector joins the BPF maps to the discovered jobs.
type ebpfCollector struct {
	reader bpf.Reader
	// keyOf gives the map key of a job (false: the job has no directory
	// in a hierarchy the programs key by, or it vanished).
	keyOf func(j *discovery.Job) (bpf.Key, bool)
	d     ebpfDescs
	level collector.Level // the descriptors say what each level emits
}

// New builds the collector over the programs cmd loaded; when loading
// failed, it returns why, and the framework logs it once and reports the
// collector unavailable.
func New(env *collector.Env) (collector.Collector, error) {
	if env.BPF == nil {
		if env.BPFErr != nil {
			return nil, env.BPFErr
		}
		return nil, errors.New("eBPF programs not loaded")
	}
	return newEBPFCollector(env.BPF.Reader, env.BPF.Key, env.Level), nil
}

// Load loads and attaches the programs for the node's cgroup layout. Any
// failure (no root, no BTF, a verifier rejection) is returned.
func Load(env *collector.Env, o Options) (*collector.BPF, error) {
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
		h, err := bpf.V1Hierarchy(procFS(env), v1)
		if err != nil {
			return nil, fmt.Errorf("v1 hierarchy of %s: %w", v1, err)
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
		return nil, err
	}
	if env.Logger != nil {
		args := []any{"v2", layout.V2, "v1_controller", v1, "pinned", o.PinPath, "reused_pins", objs.Reused(), "programs", objs.Attached()}
		if nerr := objs.NetworkErr(); nerr != nil {
			args = append(args, "network", nerr.Error())
		}
		env.Logger.Info("ebpf collector loaded", args...)
		if lerr := objs.LiveErr(); lerr != nil {
			env.Logger.Warn("ebpf: CPU time is counted at switch-out only", "cause", lerr.Error())
		}
	}
	return &collector.BPF{Reader: objs, Key: dirKeys(v1, hier), Close: objs.Close}, nil
}

func procFS(env *collector.Env) string {
	if env.ProcFS != "" {
		return env.ProcFS
	}
	return "/proc"
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

func newEBPFCollector(r bpf.Reader, keyOf func(*discovery.Job) (bpf.Key, bool), level collector.Level) *ebpfCollector {
	return &ebpfCollector{reader: r, keyOf: keyOf, d: newEBPFDescs(), level: level}
}

func (c *ebpfCollector) Collect(s *collector.Scrape, ch chan<- prometheus.Metric) error {
	snap, err := c.reader.Read()
	if err != nil {
		return err
	}
	for _, j := range s.Jobs() {
		k, ok := c.keyOf(j)
		if !ok {
			continue
		}
		cnt := snap.Jobs[k]
		if cnt == nil {
			continue // nothing ran in the job since the programs were attached
		}
		c.emitJob(ch, s.Series(j), cnt, snap.Self.Network, s.Usage(j).CPUs)
	}
	c.emitSelf(ch, &snap.Self)
	return nil
}

func (c *ebpfCollector) emitJob(ch chan<- prometheus.Metric, series *collector.JobSeries, cnt *bpf.Counters, network bool, allocated []int) {
	out := collector.NewOut(ch, c.level)
	counter := func(d *collector.Desc, v float64, extra ...string) { out.Counter(series, d, v, extra...) }
	if !cnt.Since.IsZero() {
		out.Gauge(series, c.d.countedSince, float64(cnt.Since.UnixMilli())/1e3)
	}
	// The job's allocated cores (an idle one shows as 0, which is the
	// point of per-core series). Time on other cores is real time of the
	// job's cgroup (cpu.stat has it too), but not of its allocation:
	// slurmstepd moves itself into the job's step before Slurm writes the
	// job's cpuset, and runs on any core until then. It is one sum per job,
	// so a core the job was never given has no series (measured on Slurm
	// 22.05, 24.11 and 26.05: 0.5 ms to 0.1 s per job). With no cpuset to
	// go by, every core the job ran on has its series.
	var outside uint64
	for cpu, ns := range cnt.CPUNs {
		in := slices.Contains(allocated, cpu)
		switch {
		case len(allocated) > 0 && !in:
			outside += ns
		case ns > 0 || in:
			counter(c.d.cpuCore, float64(ns)/1e9, strconv.Itoa(cpu))
		}
	}
	if outside > 0 {
		counter(c.d.cpuOutside, float64(outside)/1e9)
	}
	counter(c.d.syscallBytes, float64(cnt.RChar), "read")
	counter(c.d.syscallBytes, float64(cnt.WChar), "write")
	counter(c.d.syscalls, float64(cnt.SyscR), "read")
	counter(c.d.syscalls, float64(cnt.SyscW), "write")
	counter(c.d.storageBytes, float64(cnt.ReadBytes), "read")
	counter(c.d.storageBytes, float64(cnt.WriteBytes), "write")
	if network {
		counter(c.d.netBytes, float64(cnt.RxBytes), "receive")
		counter(c.d.netBytes, float64(cnt.TxBytes), "transmit")
		counter(c.d.netPackets, float64(cnt.RxPackets), "receive")
		counter(c.d.netPackets, float64(cnt.TxPackets), "transmit")
	}
}

func (c *ebpfCollector) emitSelf(ch chan<- prometheus.Metric, s *bpf.Self) {
	gauge := func(d *collector.Desc, v float64, lv ...string) { ch <- d.Gauge(v, lv...) }
	counter := func(d *collector.Desc, v float64, lv ...string) { ch <- d.Counter(v, lv...) }
	gauge(c.d.attached, float64(s.Attached))
	gauge(c.d.entries, float64(s.Entries), "job_counters")
	gauge(c.d.maxEntries, float64(s.Capacity), "job_counters")
	counter(c.d.overflows, float64(s.Overflows), "job_counters")
	counter(c.d.dying, float64(s.Dying))
	counter(c.d.seeded, float64(s.Seeded))
	counter(c.d.mptcp, float64(s.MPTCP))
	net := 0.0
	if s.Network {
		net = 1
	}
	gauge(c.d.network, net)
	for _, p := range s.Programs {
		counter(c.d.runSeconds, p.Runtime.Seconds(), p.Name)
		counter(c.d.runs, float64(p.RunCount), p.Name)
		counter(c.d.misses, float64(p.RecursionMisses), p.Name)
	}
}
