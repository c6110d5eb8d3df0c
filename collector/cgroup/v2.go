package cgroup

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/jobscope/jobscope/cgroupfs"
)

// memStatV2 are the memory.stat keys exported (key to itself, so a lookup
// by bytes yields a string without allocating).
var memStatV2 = identity("anon", "file", "kernel", "shmem", "file_mapped", "file_dirty", "file_writeback",
	"anon_thp", "active_anon", "inactive_anon", "active_file", "inactive_file", "unevictable", "sock")

// memEventsV2 are memory.events' keys.
var memEventsV2 = identity("low", "high", "max", "oom", "oom_kill", "oom_group_kill")

func identity(keys ...string) map[string]string {
	m := make(map[string]string, len(keys))
	for _, k := range keys {
		m[k] = k
	}
	return m
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
	jr.flat(dir, "memory.stat", func(k []byte, v uint64) string {
		name, ok := memStatV2[string(k)]
		if ok {
			jr.emit(jr.d.memStat, prometheus.GaugeValue, float64(v), name)
		}
		return name
	})
	jr.uintFile(dir, "memory.swap.current", jr.d.swapUsage, prometheus.GaugeValue, 1)
	jr.limitFile(dir, "memory.swap.max", jr.d.swapLimit)
	jr.flat(dir, "memory.events", func(k []byte, v uint64) string {
		name, ok := memEventsV2[string(k)]
		if ok {
			jr.emit(jr.d.memEvents, prometheus.CounterValue, float64(v), name)
		}
		return name
	})
	jr.flat(dir, "cpu.stat", func(k []byte, v uint64) string {
		switch string(k) {
		case "usage_usec":
			jr.emit(jr.d.cpuUsage, prometheus.CounterValue, float64(v)/1e6)
			return "usage_usec"
		case "user_usec":
			jr.emit(jr.d.cpuMode, prometheus.CounterValue, float64(v)/1e6, "user")
			return "user_usec"
		case "system_usec":
			jr.emit(jr.d.cpuMode, prometheus.CounterValue, float64(v)/1e6, "system")
			return "system_usec"
		case "nr_periods":
			jr.emit(jr.d.cpuPeriods, prometheus.CounterValue, float64(v))
			return "nr_periods"
		case "nr_throttled":
			jr.emit(jr.d.cpuThrottled, prometheus.CounterValue, float64(v))
			return "nr_throttled"
		case "throttled_usec":
			jr.emit(jr.d.cpuThrottledTime, prometheus.CounterValue, float64(v)/1e6)
			return "throttled_usec"
		}
		return ""
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
