// SPDX-License-Identifier: Apache-2.0

package cgroup

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/jobscope/jobscope/cgroupfs"
	"github.com/jobscope/jobscope/collector"
)

// memStatV1 maps v1's hierarchical memory.stat keys to the v2 names used
// in labels (plain keys are 0 at the job level: tasks live in step dirs).
var memStatV1 = newFlatTable(append(memStatKeys(
	"total_rss", "anon", "total_cache", "file", "total_shmem", "shmem", "total_mapped_file", "file_mapped",
	"total_dirty", "file_dirty", "total_writeback", "file_writeback", "total_rss_huge", "anon_thp",
	"total_active_anon", "active_anon", "total_inactive_anon", "inactive_anon",
	"total_active_file", "active_file", "total_inactive_file", "inactive_file", "total_unevictable", "unevictable"),
	flatKey{"total_swap", func(d *cgroupDescs) *collector.Desc { return d.swapUsage }, "", prometheus.GaugeValue, 1})...)

// cpuacctHZ is the unit of cpuacct.stat; Linux reports it as 100 on every
// architecture Slurm runs on.
const cpuacctHZ = 100

var cpuacctStat = newFlatTable(
	flatKey{"user", cpuModeDesc, "user", prometheus.CounterValue, cpuacctHZ},
	flatKey{"system", cpuModeDesc, "system", prometheus.CounterValue, cpuacctHZ})

var cpuStatV1 = newFlatTable(
	flatKey{"nr_periods", cpuPeriodsDesc, "", prometheus.CounterValue, 1},
	flatKey{"nr_throttled", cpuThrottledDesc, "", prometheus.CounterValue, 1},
	flatKey{"throttled_time", cpuThrottledTimeDesc, "", prometheus.CounterValue, 1e9})

// v1 reads the job-level directory of each v1 controller that has the job.
func (jr *jobReader) v1(perCore bool) {
	u := jr.usage()
	mem := jr.job.V1["memory"]
	if mem != "" {
		jr.uintFile(mem, "memory.max_usage_in_bytes", jr.d.memPeak, prometheus.GaugeValue, 1)
		limit, limited := jr.limitFile(mem, "memory.limit_in_bytes", jr.d.memLimit)
		jr.flat(mem, "memory.stat", memStatV1)
		if jr.out.Emits(jr.d.swapLimit) { // the one reader of memsw
			if memsw, ok := jr.limitFile(mem, "memory.memsw.limit_in_bytes", nil); ok && limited &&
				memsw != cgroupfs.Unlimited && limit != cgroupfs.Unlimited && memsw >= limit {
				jr.emit(jr.d.swapLimit, prometheus.GaugeValue, float64(memsw-limit))
			}
		}
		jr.v1MemoryEvents(mem)
	}
	if acct := jr.job.V1["cpuacct"]; acct != "" {
		jr.flat(acct, "cpuacct.stat", cpuacctStat)
		if perCore {
			jr.perCore(acct, u.CPUs)
		}
	}
	if cpu := jr.job.V1["cpu"]; cpu != "" {
		jr.flat(cpu, "cpu.stat", cpuStatV1)
	}
	if blk := jr.job.V1["blkio"]; blk != "" {
		jr.blkio(blk, "blkio.throttle.io_service_bytes_recursive", jr.d.ioBytes)
		jr.blkio(blk, "blkio.throttle.io_serviced_recursive", jr.d.ioOps)
	}
	if p := jr.job.V1["pids"]; p != "" {
		jr.uintFile(p, "pids.current", jr.d.pids, prometheus.GaugeValue, 1)
		jr.limitFile(p, "pids.max", jr.d.pidsLimit)
	}
}

// perCore emits cpuacct.usage_percpu for the job's allocated cores only
// (all cores with usage when the cpuset is unknown), keeping cardinality to
// what the job was given.
func (jr *jobReader) perCore(dir string, cpus []int) {
	b := jr.read(dir, "cpuacct.usage_percpu")
	if b == nil {
		return
	}
	vals, err := cgroupfs.ParseUintList(b)
	if err != nil {
		jr.malformed(dir, "cpuacct.usage_percpu", err)
		return
	}
	if cpus == nil {
		for c, v := range vals {
			if v > 0 {
				cpus = append(cpus, c)
			}
		}
	}
	for _, c := range cpus {
		if c < len(vals) {
			jr.emit(jr.d.cpuCore, prometheus.CounterValue, float64(vals[c])/1e9, strconv.Itoa(c))
		}
	}
}

func (jr *jobReader) blkio(dir, name string, desc *collector.Desc) {
	if !jr.out.Emits(desc) {
		return // not read at a level that leaves its series out
	}
	perDevice := jr.out.Whole(desc) // else summed as device="all"
	b := jr.read(dir, name)
	if b == nil {
		return
	}
	devs, err := cgroupfs.ParseBlkio(b)
	if err != nil {
		jr.malformed(dir, name, err)
	}
	seen := make(map[string]bool, len(devs))
	var sum [2]uint64
	for _, dev := range sortedKeys(devs) {
		rw := devs[dev]
		n := jr.devices.name(dev)
		if seen[n] {
			continue // two numbers one name (a broken sysfs): one series, as on v2
		}
		seen[n] = true
		sum[0] += rw[0]
		sum[1] += rw[1]
		if perDevice {
			jr.emit(desc, prometheus.CounterValue, float64(rw[0]), n, "read")
			jr.emit(desc, prometheus.CounterValue, float64(rw[1]), n, "write")
		}
	}
	if !perDevice {
		jr.blockIOSum(sum)
	}
}
