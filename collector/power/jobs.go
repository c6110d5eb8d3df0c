// SPDX-License-Identifier: Apache-2.0

package power

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/jobscope/jobscope/collector"
	"github.com/jobscope/jobscope/collector/provide/jobcgroup"
	"github.com/jobscope/jobscope/discovery"
	"github.com/jobscope/jobscope/power"
)

// perJob reads each job's usage, steps the ledger and emits the per-job
// counters. A source is emitted for every job while its meter is
// configured, so series do not flap when a reading is missed.
func (c *powerCollector) perJob(s *collector.Scrape, ch chan<- prometheus.Metric, jobs []*discovery.Job, smp power.Sample, r nodeReading, hasGPU bool) {
	kept := make([]*discovery.Job, 0, len(jobs))
	smp.Jobs = make([]power.JobSample, 0, len(jobs))
	for _, j := range jobs {
		// The scrape's one reading of the job's cgroup, shared with the
		// cgroup collector (which reports its bad files).
		u := c.opts.Usage.Usage(s, j)
		if u.Has&jobcgroup.HasCPU == 0 {
			if !u.Gone {
				s.Problem("job_usage", fmt.Errorf("job %s: no CPU time in its cgroup", j.ID))
			}
			continue
		}
		kept = append(kept, j)
		smp.Jobs = append(smp.Jobs, power.JobSample{ID: j.ID, CPUSeconds: u.CPU, MemoryBytes: u.Memory})
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
		series := s.Series(kept[i])
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
			"Node power in watts from the BMC (IPMI DCMI Get Power Reading, in-band through the IPMI device or through --collector.power.ipmi-command), by stat current, minimum, maximum, average over the BMC's own statistics period; cached, read at most once per --collector.power.ipmi-interval.", "stat"),
		ipmiAge: collector.NewDesc("jobscope_ipmi_power_age_seconds",
			"Age of the cached IPMI power reading in seconds."),
		factor: collector.NewDesc("jobscope_emissions_factor_grams_per_kwh",
			"Grid emission factor in gCO2e per kWh, by source: static (--collector.power.emissions.factor), owid (embedded Our World in Data yearly country figure, latest year per country), electricitymaps or rte (live, cached per --collector.power.emissions.refresh).", "source"),
		jobEnergy: collector.NewJobDesc("slurm_job_energy_joules_total",
			"Energy attributed to the job in joules since jobscope first saw it, by source: rapl_cpu (RAPL package energy by CPU-time share), rapl_dram (RAPL DRAM energy by memory share), ipmi (BMC node energy minus GPUs by CPU-time share; an alternative to rapl_cpu+rapl_dram, not an addition), gpu (measured energy of the GPUs the job held). Method and idle policy in docs/energy.md.", "source"),
		unattributed: collector.NewDesc("jobscope_energy_unattributed_joules_total",
			"Node energy in joules measured since jobscope started that no job was given, by source as in slurm_job_energy_joules_total (idle power under --collector.power.idle-policy=capacity, GPUs no job held, the first interval); with the jobs' counters it adds up to the node's measured energy.", "source"),
		jobGrams: collector.NewJobDesc("slurm_job_emissions_grams_total",
			"Emissions attributed to the job in grams CO2e since jobscope first saw it: energy (ipmi+gpu when IPMI is configured, else rapl_cpu+rapl_dram+gpu) times the emission factor in force in each interval (live, else static, else owid)."),
	}
	d.rapl = map[power.Domain]*collector.Desc{
		power.DomainPackage: d.raplPackage, power.DomainCore: d.raplCore,
		power.DomainUncore: d.raplUncore, power.DomainDRAM: d.raplDRAM,
	}
	return d
}
