package collector

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/pflag"

	"github.com/jobscope/jobscope/bpf"
	"github.com/jobscope/jobscope/collector/cgroupfs"
	"github.com/jobscope/jobscope/collector/discovery"
)

// EBPFOptions configure the ebpf collector.
type EBPFOptions struct {
	PinPath      string
	MaxJobs      uint32
	Stats        bool
	Network      bool
	V1Controller string
	// Features answers what the kernel supports (nil: probe it); tests
	// force a kernel without a feature.
	Features bpf.Features
}

// EBPFFactory describes the ebpf collector.
func EBPFFactory() Factory {
	return Factory{
		Name:      "ebpf",
		Help:      "Per-job CPU time per core, IO and network counters from CO-RE eBPF programs (needs root and kernel BTF)",
		DefaultIn: []Mode{ModeNode},
		NeedsJobs: true,
		Descs:     func() []*prometheus.Desc { return DescsOf(newEBPFDescs()) },
		Flags: func(fs *pflag.FlagSet) func(env *Env) (Collector, error) {
			o := &EBPFOptions{}
			fs.StringVar(&o.PinPath, "bpf.pin-path", "/sys/fs/bpf/jobscope", "bpffs directory the ebpf collector pins its maps in, so a restart carries the counters on (\"\" pins nothing). bpffs is mounted at /sys/fs/bpf if nothing is mounted there.")
			fs.Uint32Var(&o.MaxJobs, "bpf.max-jobs", 1024, "Job cgroups the ebpf counter map holds; more are counted in jobscope_bpf_map_overflows_total.")
			fs.BoolVar(&o.Stats, "bpf.stats", false, "Turn on the kernel's BPF run-time statistics (kernel.bpf_stats_enabled, ~20 ns per program run) for jobscope_bpf_program_* metrics.")
			fs.BoolVar(&o.Network, "bpf.network", true, "Count job network traffic (cgroup_skb programs on the cgroup v2 root).")
			fs.StringVar(&o.V1Controller, "bpf.v1-controller", "cpuacct", "cgroup v1 hierarchy that keys jobs on v1 and hybrid hosts (cpuacct or memory; the other is used when it is not mounted).")
			return func(env *Env) (Collector, error) { return NewEBPFCollector(env, *o) }
		},
	}
}

// ebpfCollector joins the BPF maps to the discovered jobs.
type ebpfCollector struct {
	reader bpf.Reader
	closer func() error
	// keyOf gives the map key of a job (false: the job has no directory
	// in a hierarchy the programs key by, or it vanished).
	keyOf func(j *discovery.Job) (bpf.Key, bool)
	d     ebpfDescs
}

// NewEBPFCollector loads and attaches the programs. Any failure (no root, no
// BTF, a verifier rejection) is returned, so the framework logs it once and
// reports the collector unavailable.
func NewEBPFCollector(env *Env, o EBPFOptions) (Collector, error) {
	var layout discovery.Layout
	if env.Discoverer != nil {
		layout = env.Discoverer.Layout()
	} else {
		l, err := discovery.DetectLayout(env.CgroupFS, procFS(env))
		if err != nil {
			return nil, fmt.Errorf("finding cgroup mounts: %w", err)
		}
		layout = l
	}
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
	if env.Shared != nil {
		// The cgroup collector drops its per-core series and the process
		// collector its /proc/<pid>/io fallback while these are set.
		env.Shared.Set(SharedEBPFPerCore, true)
		env.Shared.Set(EBPFLoadedKey, true)
	}
	c := newEBPFCollector(objs, dirKeys(v1, hier))
	c.closer = objs.Close
	return c, nil
}

func procFS(env *Env) string {
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

func newEBPFCollector(r bpf.Reader, keyOf func(*discovery.Job) (bpf.Key, bool)) *ebpfCollector {
	return &ebpfCollector{reader: r, keyOf: keyOf, d: newEBPFDescs()}
}

// Close detaches the programs (pinned maps stay for the next run).
func (c *ebpfCollector) Close() error {
	if c.closer == nil {
		return nil
	}
	return c.closer()
}

func (c *ebpfCollector) Collect(s *Scrape, ch chan<- prometheus.Metric) error {
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
		c.emitJob(ch, j.Labels(), cnt, snap.Self.Network, jobCPUs(j))
	}
	c.emitSelf(ch, &snap.Self)
	return nil
}

func (c *ebpfCollector) emitJob(ch chan<- prometheus.Metric, l []string, cnt *bpf.Counters, network bool, allocated []int) {
	with := func(extra string) []string { return append(append(make([]string, 0, len(l)+1), l...), extra) }
	counter := func(d *prometheus.Desc, v float64, extra string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, with(extra)...)
	}
	// The job's allocated cores (an idle one shows as 0, which is the
	// point of per-core series) and any other core it ran on.
	for cpu, ns := range cnt.CPUNs {
		if ns > 0 || slices.Contains(allocated, cpu) {
			counter(c.d.cpuCore, float64(ns)/1e9, strconv.Itoa(cpu))
		}
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
	gauge := func(d *prometheus.Desc, v float64, lv ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, lv...)
	}
	counter := func(d *prometheus.Desc, v float64, lv ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, lv...)
	}
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

// jobCPUs returns the job's cpuset (nil when it cannot be read).
func jobCPUs(j *discovery.Job) []int {
	dir, name := j.ControllerDir("cpuset"), "cpuset.cpus.effective"
	if j.Version == 1 {
		name = "cpuset.cpus"
	}
	if dir == "" {
		return nil
	}
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		return nil
	}
	cpus, _ := cgroupfs.ParseCPUList(b)
	return cpus
}
