// SPDX-License-Identifier: Apache-2.0

package cgroup

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/jobscope/jobscope/cgroupfs"
	"github.com/jobscope/jobscope/collector"
)

// memStatV2 are the memory.stat keys exported, each as its own type.
var memStatV2 = newFlatTable(memStatKeys(
	"anon", "anon", "file", "file", "kernel", "kernel", "shmem", "shmem", "file_mapped", "file_mapped",
	"file_dirty", "file_dirty", "file_writeback", "file_writeback", "anon_thp", "anon_thp",
	"active_anon", "active_anon", "inactive_anon", "inactive_anon", "active_file", "active_file",
	"inactive_file", "inactive_file", "unevictable", "unevictable", "sock", "sock")...)

// memEventsV2 are memory.events' keys.
var memEventsV2 = func() *flatTable {
	var keys []flatKey
	for _, e := range []string{"low", "high", "max", "oom", "oom_kill", "oom_group_kill"} {
		keys = append(keys, flatKey{e, func(d *cgroupDescs) *collector.Desc { return d.memEvents }, e, prometheus.CounterValue, 1})
	}
	return newFlatTable(keys...)
}()

// memStatKeys pairs raw memory.stat keys with their type label (the
// descriptor says which types basic emits).
func memStatKeys(pairs ...string) []flatKey {
	keys := make([]flatKey, 0, len(pairs)/2)
	for i := 0; i+1 < len(pairs); i += 2 {
		typ := pairs[i+1]
		keys = append(keys, flatKey{pairs[i], func(d *cgroupDescs) *collector.Desc { return d.memStat }, typ, prometheus.GaugeValue, 1})
	}
	return keys
}

func cpuModeDesc(d *cgroupDescs) *collector.Desc          { return d.cpuMode }
func cpuPeriodsDesc(d *cgroupDescs) *collector.Desc       { return d.cpuPeriods }
func cpuThrottledDesc(d *cgroupDescs) *collector.Desc     { return d.cpuThrottled }
func cpuThrottledTimeDesc(d *cgroupDescs) *collector.Desc { return d.cpuThrottledTime }

// v2 reads the job-level directory of a cgroup v2 job. Every counter there
// is hierarchical, so steps coming and going never make it go backwards.
func (jr *jobReader) v2() {
	dir := jr.job.Dir
	if jr.usage(); jr.Gone {
		return
	}
	jr.uintFile(dir, "memory.peak", jr.d.memPeak, prometheus.GaugeValue, 1)
	jr.limitFile(dir, "memory.max", jr.d.memLimit)
	jr.flat(dir, "memory.stat", memStatV2)
	jr.uintFile(dir, "memory.swap.current", jr.d.swapUsage, prometheus.GaugeValue, 1)
	jr.limitFile(dir, "memory.swap.max", jr.d.swapLimit)
	jr.flat(dir, "memory.events", memEventsV2)
	jr.pressure(dir)
	if b := jr.read(dir, "io.stat"); b != nil {
		stats, err := cgroupfs.ParseIOStat(b)
		if err != nil {
			jr.malformed(dir, "io.stat", err)
		}
		seen := map[string]bool{}
		perDevice := jr.out.Whole(jr.d.ioBytes) // else summed as device="all"
		var sum [2]uint64
		for _, st := range stats {
			dev := jr.devices.name(st.Device)
			if seen[dev] {
				continue
			}
			seen[dev] = true
			sum[0] += st.ReadBytes
			sum[1] += st.WriteBytes
			if perDevice {
				jr.emit(jr.d.ioBytes, prometheus.CounterValue, float64(st.ReadBytes), dev, "read")
				jr.emit(jr.d.ioBytes, prometheus.CounterValue, float64(st.WriteBytes), dev, "write")
			}
			jr.emit(jr.d.ioOps, prometheus.CounterValue, float64(st.ReadOps), dev, "read")
			jr.emit(jr.d.ioOps, prometheus.CounterValue, float64(st.WriteOps), dev, "write")
		}
		if !perDevice {
			jr.blockIOSum(sum)
		}
	}
	jr.uintFile(dir, "pids.current", jr.d.pids, prometheus.GaugeValue, 1)
	jr.limitFile(dir, "pids.max", jr.d.pidsLimit)
}

// blockIOSum emits the basic level's block IO: bytes summed over devices.
// A device's counts never go down while the cgroup lives, nor does the set
// of devices it has used shrink, so the sum is a counter too.
func (jr *jobReader) blockIOSum(sum [2]uint64) {
	jr.emit(jr.d.ioBytes, prometheus.CounterValue, float64(sum[0]), "all", "read")
	jr.emit(jr.d.ioBytes, prometheus.CounterValue, float64(sum[1]), "all", "write")
}
