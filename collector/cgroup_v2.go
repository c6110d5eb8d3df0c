package collector

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/jobscope/jobscope/collector/cgroupfs"
)

// memStatV2 are the memory.stat keys exported, by their v2 names.
var memStatV2 = map[string]bool{
	"anon": true, "file": true, "shmem": true, "file_mapped": true, "file_dirty": true, "file_writeback": true,
	"anon_thp": true, "file_thp": true, "shmem_thp": true, "active_anon": true, "inactive_anon": true,
	"active_file": true, "inactive_file": true, "unevictable": true, "kernel": true, "kernel_stack": true,
	"pagetables": true, "sock": true, "slab": true, "swapcached": true,
}

// v2 reads the job-level directory of a cgroup v2 job. Every counter there
// is hierarchical, so steps coming and going never make it go backwards.
func (jr *jobReader) v2() {
	dir := jr.job.Dir
	jr.uintFile(dir, "memory.current", jr.d.memUsage, prometheus.GaugeValue, 1)
	if jr.gone {
		return
	}
	jr.uintFile(dir, "memory.peak", jr.d.memPeak, prometheus.GaugeValue, 1)
	jr.limitFile(dir, "memory.max", jr.d.memLimit)
	jr.flat(dir, "memory.stat", func(k string, v uint64) {
		if memStatV2[k] {
			jr.emit(jr.d.memStat, prometheus.GaugeValue, float64(v), k)
		}
	})
	jr.uintFile(dir, "memory.swap.current", jr.d.swapUsage, prometheus.GaugeValue, 1)
	jr.limitFile(dir, "memory.swap.max", jr.d.swapLimit)
	jr.flat(dir, "memory.events", func(k string, v uint64) {
		jr.emit(jr.d.memEvents, prometheus.CounterValue, float64(v), k)
	})
	jr.flat(dir, "cpu.stat", func(k string, v uint64) {
		switch k {
		case "usage_usec":
			jr.emit(jr.d.cpuUsage, prometheus.CounterValue, float64(v)/1e6)
		case "user_usec":
			jr.emit(jr.d.cpuMode, prometheus.CounterValue, float64(v)/1e6, "user")
		case "system_usec":
			jr.emit(jr.d.cpuMode, prometheus.CounterValue, float64(v)/1e6, "system")
		case "nr_periods":
			jr.emit(jr.d.cpuPeriods, prometheus.CounterValue, float64(v))
		case "nr_throttled":
			jr.emit(jr.d.cpuThrottled, prometheus.CounterValue, float64(v))
		case "throttled_usec":
			jr.emit(jr.d.cpuThrottledTime, prometheus.CounterValue, float64(v)/1e6)
		}
	})
	if jr.cpuset(dir, "cpuset.cpus.effective") == nil && !jr.gone {
		jr.cpuset(dir, "cpuset.cpus")
	}
	jr.pressure(dir)
	if b := jr.read(dir, "io.stat"); b != nil {
		stats, err := cgroupfs.ParseIOStat(b)
		if err != nil {
			jr.malformed(dir, "io.stat", err)
		}
		seen := map[string]bool{}
		for _, st := range stats {
			dev := jr.devices.name(st.Device)
			if seen[dev] {
				continue
			}
			seen[dev] = true
			jr.emit(jr.d.ioBytes, prometheus.CounterValue, float64(st.ReadBytes), dev, "read")
			jr.emit(jr.d.ioBytes, prometheus.CounterValue, float64(st.WriteBytes), dev, "write")
			jr.emit(jr.d.ioOps, prometheus.CounterValue, float64(st.ReadOps), dev, "read")
			jr.emit(jr.d.ioOps, prometheus.CounterValue, float64(st.WriteOps), dev, "write")
		}
	}
	jr.uintFile(dir, "pids.current", jr.d.pids, prometheus.GaugeValue, 1)
	jr.limitFile(dir, "pids.max", jr.d.pidsLimit)
}
