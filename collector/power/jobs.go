package power

import (
	"errors"
	"path/filepath"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/jobscope/jobscope/cgroupfs"
	"github.com/jobscope/jobscope/collector"
	"github.com/jobscope/jobscope/collector/discovery"
	"github.com/jobscope/jobscope/power"
)

// JobUsageSource gives a job's cumulative CPU seconds and its memory in
// use, the inputs of per-job energy. The cgroup reader is the default; a
// collector with better data (eBPF CPU time) can put its own in Shared
// under PowerJobUsageKey and the power collector uses it from the next
// scrape on.
type JobUsageSource interface {
	JobUsage(j *discovery.Job) (cpuSeconds, memoryBytes float64, err error)
}

// PowerJobUsageKey is the Shared key of a JobUsageSource replacing the
// cgroup reader.
const PowerJobUsageKey = "power.job-usage"

// errNoCPU says a job has no readable CPU accounting file.
var errNoCPU = errors.New("no CPU accounting file for the job")

// cgroupUsage reads cpu.stat usage_usec and memory.current (v2), or
// cpuacct.usage and memory.usage_in_bytes (v1). Used under the power
// collector's lock, so one reader buffer serves every job.
type cgroupUsage struct{ r *cgroupfs.Reader }

func newCgroupUsage() *cgroupUsage { return &cgroupUsage{r: cgroupfs.NewReader()} }

func (u *cgroupUsage) JobUsage(j *discovery.Job) (float64, float64, error) {
	var cpu, mem float64
	if j.Version == 2 {
		b, err := u.r.Read(filepath.Join(j.Dir, "cpu.stat"))
		if err != nil {
			return 0, 0, err
		}
		found := false
		_ = cgroupfs.ParseFlatKeyed(b, func(k []byte, v uint64) {
			if string(k) == "usage_usec" {
				cpu, found = float64(v)/1e6, true
			}
		})
		if !found {
			return 0, 0, errNoCPU
		}
		if b, err := u.r.Read(filepath.Join(j.Dir, "memory.current")); err == nil {
			if v, err := cgroupfs.ParseUint(b); err == nil {
				mem = float64(v)
			}
		}
		return cpu, mem, nil
	}
	dir := j.V1["cpuacct"]
	if dir == "" {
		return 0, 0, errNoCPU
	}
	b, err := u.r.Read(filepath.Join(dir, "cpuacct.usage"))
	if err != nil {
		return 0, 0, err
	}
	v, err := cgroupfs.ParseUint(b)
	if err != nil {
		return 0, 0, err
	}
	cpu = float64(v) / 1e9
	if d := j.V1["memory"]; d != "" {
		if b, err := u.r.Read(filepath.Join(d, "memory.usage_in_bytes")); err == nil {
			if v, err := cgroupfs.ParseUint(b); err == nil {
				mem = float64(v)
			}
		}
	}
	return cpu, mem, nil
}

func (c *powerCollector) usageSource() JobUsageSource {
	if c.env != nil && c.env.Shared != nil {
		if v, ok := c.env.Shared.Lookup(PowerJobUsageKey); ok {
			if u, ok := v.(JobUsageSource); ok {
				return u
			}
		}
	}
	return c.usage
}

// perJob reads each job's usage, steps the ledger and emits the per-job
// counters. A source is emitted for every job while its meter is
// configured, so series do not flap when a reading is missed.
func (c *powerCollector) perJob(s *collector.Scrape, ch chan<- prometheus.Metric, jobs []*discovery.Job, smp power.Sample, r nodeReading, hasGPU bool) {
	src := c.usageSource()
	kept := make([]*discovery.Job, 0, len(jobs))
	smp.Jobs = make([]power.JobSample, 0, len(jobs))
	for _, j := range jobs {
		cpu, mem, err := src.JobUsage(j)
		if err != nil {
			if !cgroupfs.Gone(err) {
				s.Problem("job_usage", err)
			}
			continue
		}
		kept = append(kept, j)
		smp.Jobs = append(smp.Jobs, power.JobSample{ID: j.ID, CPUSeconds: cpu, MemoryBytes: mem})
	}
	var sources []power.Source
	if r.hasCPUZones {
		sources = append(sources, power.SourceCPU)
	}
	if r.hasDRAM {
		sources = append(sources, power.SourceDRAM)
	}
	if c.ipmi != nil {
		sources = append(sources, power.SourceNode)
	}
	if hasGPU {
		sources = append(sources, power.SourceGPU)
	}
	grams := c.opts.Factor > 0 || c.owid != nil || c.live != nil
	totals := c.ledger.Step(smp)
	rest := c.ledger.Unattributed()
	for _, src := range sources {
		ch <- c.d.unattributed.Counter(rest.Of(src), string(src))
	}
	for i, t := range totals {
		series := c.pairs.Job(kept[i])
		for _, src := range sources {
			ch <- series.Counter(c.d.jobEnergy, t.Joules.Of(src), string(src))
		}
		if grams && len(sources) > 0 {
			ch <- series.Counter(c.d.jobGrams, t.Grams)
		}
	}
}

// powerDescs holds the power collector's descriptors, built once.
type powerDescs struct {
	rapl          map[power.Domain]*collector.Desc
	raplPackage   *collector.Desc
	raplCore      *collector.Desc
	raplUncore    *collector.Desc
	raplDRAM      *collector.Desc
	psys          *collector.Desc
	ipmi, ipmiAge *collector.Desc
	factor        *collector.Desc
	jobEnergy     *collector.Desc
	unattributed  *collector.Desc
	jobGrams      *collector.Desc
}

func newPowerDescs() powerDescs {
	const rapl = " from RAPL (powercap sysfs energy_uj, made monotonic across its wrap at max_energy_range_uj; starts at the first value read)"
	zone := func(name, what string) *collector.Desc {
		return collector.NewDesc("jobscope_rapl_"+name+"_joules_total", what+" energy of the CPU socket in joules"+rapl+".", "socket")
	}
	d := powerDescs{
		raplPackage: zone("package", "Package (cores, caches, uncore)"),
		raplCore:    zone("core", "Core (power plane 0)"),
		raplUncore:  zone("uncore", "Uncore/graphics (power plane 1)"),
		raplDRAM:    zone("dram", "DRAM"),
		psys: collector.NewDesc("jobscope_rapl_psys_joules_total",
			"Platform (psys) energy in joules"+rapl+"; it includes the packages."),
		ipmi: collector.NewDesc("jobscope_ipmi_power_watts",
			"Node power in watts from the BMC (IPMI DCMI Get Power Reading, in-band through the IPMI device or through --power.ipmi-command), by stat current, minimum, maximum, average over the BMC's own statistics period; cached, read at most once per --power.ipmi-interval.", "stat"),
		ipmiAge: collector.NewDesc("jobscope_ipmi_power_age_seconds",
			"Age of the cached IPMI power reading in seconds."),
		factor: collector.NewDesc("jobscope_emissions_factor_grams_per_kwh",
			"Grid emission factor in gCO2e per kWh, by source: static (--power.emissions.factor), owid (embedded Our World in Data 2023 yearly country figure), electricitymaps or rte (live, cached per --power.emissions.refresh).", "source"),
		jobEnergy: collector.NewJobDesc("slurm_job_energy_joules_total",
			"Energy attributed to the job in joules since jobscope first saw it, by source: rapl_cpu (RAPL package energy by CPU-time share), rapl_dram (RAPL DRAM energy by memory share), ipmi (BMC node energy minus GPUs by CPU-time share; an alternative to rapl_cpu+rapl_dram, not an addition), gpu (measured energy of the GPUs the job held). Method and idle policy in docs/energy.md.", "source"),
		unattributed: collector.NewDesc("jobscope_energy_unattributed_joules_total",
			"Node energy in joules measured since jobscope started that no job was given, by source as in slurm_job_energy_joules_total (idle power under --power.idle-policy=capacity, GPUs no job held, the first interval); with the jobs' counters it adds up to the node's measured energy.", "source"),
		jobGrams: collector.NewJobDesc("slurm_job_emissions_grams_total",
			"Emissions attributed to the job in grams CO2e since jobscope first saw it: energy (ipmi+gpu when IPMI is configured, else rapl_cpu+rapl_dram+gpu) times the emission factor in force in each interval (live, else static, else owid)."),
	}
	d.rapl = map[power.Domain]*collector.Desc{
		power.DomainPackage: d.raplPackage, power.DomainCore: d.raplCore,
		power.DomainUncore: d.raplUncore, power.DomainDRAM: d.raplDRAM,
	}
	return d
}
