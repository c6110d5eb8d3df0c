// SPDX-License-Identifier: Apache-2.0

package ebpf

import (
	"slices"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/pflag"

	"github.com/jobscope/jobscope/bpf"
	"github.com/jobscope/jobscope/collector"
	"github.com/jobscope/jobscope/collector/provide"
	"github.com/jobscope/jobscope/collector/provide/ebpfprogs"
	"github.com/jobscope/jobscope/collector/provide/jobcgroup"
	"github.com/jobscope/jobscope/discovery"
)

// Factory describes the ebpf collector. Its programs are loaded by their
// provider (ebpfprogs), which owns the --bpf.* flags.
func Factory() collector.Factory {
	return collector.Factory{
		Name:      "ebpf",
		Help:      "Per-job CPU time per core, IO and network counters from CO-RE eBPF programs (needs root and kernel BTF)",
		DefaultIn: []collector.Mode{collector.ModeNode},
		NeedsJobs: true,
		Needs:     []string{jobcgroup.Name, ebpfprogs.Name},
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
	usage *jobcgroup.Provider // the job's cores
	d     ebpfDescs
	level collector.Level // the descriptors say what each level emits
}

// New builds the collector over the programs their provider loaded; when
// loading failed, it returns why, and the framework logs it once and
// reports the collector unavailable.
func New(env *collector.Env) (collector.Collector, error) {
	progs, err := provide.Need[*ebpfprogs.Provider](env.Providers, ebpfprogs.Name)
	if err != nil {
		return nil, err
	}
	usage, err := provide.Need[*jobcgroup.Provider](env.Providers, jobcgroup.Name)
	if err != nil {
		return nil, err
	}
	return newEBPFCollector(progs.Reader, progs.Key, usage, env.Level), nil
}

func newEBPFCollector(r bpf.Reader, keyOf func(*discovery.Job) (bpf.Key, bool), usage *jobcgroup.Provider, level collector.Level) *ebpfCollector {
	if usage == nil {
		usage = jobcgroup.New()
	}
	return &ebpfCollector{reader: r, keyOf: keyOf, usage: usage, d: newEBPFDescs(), level: level}
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
		c.emitJob(ch, s.Series(j), cnt, snap.Self.Network, c.usage.Usage(s, j).CPUs)
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
