// SPDX-License-Identifier: Apache-2.0

//go:build linux

package bpf

import (
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

// bootNow is CLOCK_BOOTTIME in ns (bpf_ktime_get_boot_ns's clock), 0 if
// it cannot be read.
func bootNow() uint64 {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts) != nil {
		return 0
	}
	return uint64(ts.Nano())
}

// Read folds the running slices of job tasks in (fold_running), then sums
// each job's per-CPU values (keeping CPU time per CPU) and reads the self
// counters and, when kernel statistics are on, program run times.
func (o *Objects) Read() (*Snapshot, error) {
	if o.fold != nil {
		if err := drain(o.fold); err != nil {
			return nil, fmt.Errorf("running %s: %w", jobscopeProgFoldRunning, err)
		}
	}
	s := &Snapshot{Jobs: map[Key]*Counters{}}
	wall, boot := time.Now(), bootNow()
	var k jobscopeJobKey
	var vals []jobscopeCounters
	it := o.maps.JobCounters.Iterate()
	for it.Next(&k, &vals) {
		c := &Counters{CPUNs: make([]uint64, len(vals))}
		var since uint64
		for cpu, v := range vals {
			if v.SinceNs != 0 && (since == 0 || v.SinceNs < since) {
				since = v.SinceNs
			}
			c.CPUNs[cpu] = v.CpuNs + v.CpuNsRunning
			c.RChar += v.Rchar
			c.WChar += v.Wchar
			c.SyscR += v.Syscr
			c.SyscW += v.Syscw
			c.ReadBytes += v.ReadBytes
			c.WriteBytes += v.WriteBytes
			c.RxBytes += v.RxBytes
			c.TxBytes += v.TxBytes
			c.RxPackets += v.RxPackets
			c.TxPackets += v.TxPackets
		}
		if since != 0 && boot != 0 {
			c.Since = wall.Add(-time.Duration(boot - min(since, boot)))
		}
		s.Jobs[Key{Hierarchy: k.Hierarchy, CgroupID: k.CgroupId}] = c
	}
	if err := it.Err(); err != nil {
		return nil, fmt.Errorf("reading %s: %w", jobscopeMapJobCounters, err)
	}
	s.Self = Self{
		Attached: len(o.links),
		Entries:  len(s.Jobs),
		Capacity: int(o.maps.JobCounters.MaxEntries()),
		Network:  o.netErr == nil,
	}
	for idx, dst := range []*uint64{&s.Self.Overflows, &s.Self.Dying, &s.Self.Seeded, &s.Self.MPTCP} {
		var per []uint64
		if err := o.maps.SelfCounters.Lookup(uint32(idx), &per); err != nil {
			return nil, fmt.Errorf("reading %s: %w", jobscopeMapSelfCounters, err)
		}
		for _, v := range per {
			*dst += v
		}
	}
	s.Self.StatsOn = o.stats != nil || statsEnabled()
	if s.Self.StatsOn {
		names := make([]string, 0, len(o.progs))
		for n := range o.progs {
			if n != jobscopeProgSeedTasks {
				names = append(names, n)
			}
		}
		sort.Strings(names)
		for _, n := range names {
			st, err := o.progs[n].Stats()
			if err != nil {
				continue
			}
			s.Self.Programs = append(s.Self.Programs, ProgramStats{Name: n, Runtime: st.Runtime, RunCount: st.RunCount, RecursionMisses: st.RecursionMisses})
		}
	}
	return s, nil
}

// statsEnabled reads kernel.bpf_stats_enabled. The sysctl shows only its own
// setting, not stats turned on through a BPF_ENABLE_STATS fd (--bpf.stats).
func statsEnabled() bool {
	b, err := os.ReadFile("/proc/sys/kernel/bpf_stats_enabled")
	return err == nil && strings.TrimSpace(string(b)) == "1"
}

// Program returns a loaded program by name (benchmarks read its stats).
func (o *Objects) Program(name string) *ebpf.Program { return o.progs[name] }
