// SPDX-License-Identifier: Apache-2.0

package jobcgroup

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jobscope/jobscope/cgroupfs"
	"github.com/jobscope/jobscope/collector/provide"
	"github.com/jobscope/jobscope/discovery"
)

// Usage is what one job's cgroup says of its CPU, memory and cores in one
// scrape. It is read once per scrape, by whichever collector asks first,
// and shared: the cgroup collector exports it, the power collector splits
// energy by it, the ebpf collector keeps per-core series for the cores.
type Usage struct {
	// CPU time in seconds (v2 cpu.stat usage_usec, v1 cpuacct.usage);
	// on v2 also user, system and throttled time and the CFS periods.
	CPU, User, System, ThrottledTime float64
	Periods, Throttled               float64
	// Memory in use in bytes (v2 memory.current, v1 memory.usage_in_bytes).
	Memory float64
	// CPUs are the cores the job may run on (cpuset.cpus.effective, else
	// cpuset.cpus; v1 cpuset.cpus).
	CPUs []int
	Has  UsageFields
	// Gone says the job's cgroup vanished while it was read.
	Gone bool
	// Problems are files that could not be read or parsed, for the cgroup
	// collector to report (the others use what could be read).
	Problems []cgroupfs.Problem
}

// UsageFields says which fields of a Usage were read.
type UsageFields uint16

// The fields of a Usage.
const (
	HasCPU UsageFields = 1 << iota
	HasUser
	HasSystem
	HasThrottledTime
	HasPeriods
	HasThrottled
	HasMemory
	HasCPUs
)

// cpusetTTL: a job's cpuset is set when it starts and changes only by an
// admin's hand; it is re-read this often, not every scrape. During the
// job's first cpusetTTL in jobscope's view it is read at every scrape: a job
// directory exists before Slurm writes its cpuset, and a read then gets the
// parent's (every core), which a cache kept for a minute (VM A, Slurm 22.05:
// a pinned job's per-core series on all four cores at two scrapes).
const cpusetTTL = time.Minute

// usageReader reads Usages, keeping each job's cpuset between scrapes.
type usageReader struct {
	readers sync.Pool
	cpusets *provide.State[cpusetCache]
	now     func() time.Time
	// swept is the serial of the latest scrape that swept cpusets.
	swept atomic.Uint64
}

type cpusetCache struct {
	cpus     []int
	ok       bool
	problems []cgroupfs.Problem // reported again at each scrape the cache serves
	readAt   time.Time
	firstAt  time.Time // of the first read: the cpuset may not be set yet
}

func newUsageReader() *usageReader {
	u := &usageReader{cpusets: provide.NewState(func() *cpusetCache { return &cpusetCache{} }), now: time.Now}
	u.readers.New = func() any { return cgroupfs.NewReader() }
	return u
}

// cpuStatV2 indexes the cpu.stat keys a Usage keeps; de-dup is on the raw
// key (a repeated line keeps its first value).
var cpuStatV2 = map[string]UsageFields{
	"usage_usec": HasCPU, "user_usec": HasUser, "system_usec": HasSystem,
	"nr_periods": HasPeriods, "nr_throttled": HasThrottled, "throttled_usec": HasThrottledTime,
}

// read reads j's usage through f, whose open directories the caller may
// go on using (nil: a reader of its own).
func (u *usageReader) read(s provide.Scrape, j *discovery.Job, f *cgroupfs.Files) *Usage {
	if f == nil {
		r := u.readers.Get().(*cgroupfs.Reader)
		defer u.readers.Put(r)
		f = cgroupfs.NewFiles(r, nil)
		defer f.Close()
	}
	us := &Usage{}
	us.Problems = f.Collect(func() { u.readInto(s, j, f, us) })
	us.Gone = f.Gone
	return us
}

func (u *usageReader) readInto(s provide.Scrape, j *discovery.Job, f *cgroupfs.Files, us *Usage) {
	if j.Version == 2 {
		us.readV2(f, j.Dir)
	} else {
		if v, ok := f.Uint(j.V1["cpuacct"], "cpuacct.usage"); ok {
			us.CPU, us.Has = float64(v)/1e9, us.Has|HasCPU
		}
		if v, ok := f.Uint(j.V1["memory"], "memory.usage_in_bytes"); ok {
			us.Memory, us.Has = float64(v), us.Has|HasMemory
		}
	}
	if !f.Gone {
		u.cpuset(s, j, f, us)
	}
}

func (us *Usage) readV2(f *cgroupfs.Files, dir string) {
	if v, ok := f.Uint(dir, "memory.current"); ok {
		us.Memory, us.Has = float64(v), us.Has|HasMemory
	}
	b := f.Read(dir, "cpu.stat")
	if b == nil {
		return
	}
	err := cgroupfs.ParseFlatKeyed(b, func(k []byte, v uint64) {
		field, ok := cpuStatV2[string(k)]
		if !ok || us.Has&field != 0 {
			return
		}
		us.Has |= field
		switch field {
		case HasCPU:
			us.CPU = float64(v) / 1e6
		case HasUser:
			us.User = float64(v) / 1e6
		case HasSystem:
			us.System = float64(v) / 1e6
		case HasThrottledTime:
			us.ThrottledTime = float64(v) / 1e6
		case HasPeriods:
			us.Periods = float64(v)
		case HasThrottled:
			us.Throttled = float64(v)
		}
	})
	if err != nil {
		f.Malformed(dir, "cpu.stat", err)
	}
}

// cpuset reads the job's cores, from the cache while it is fresh.
func (u *usageReader) cpuset(s provide.Scrape, j *discovery.Job, f *cgroupfs.Files, us *Usage) {
	dir, name, fallback := j.Dir, "cpuset.cpus.effective", "cpuset.cpus"
	if j.Version == 1 {
		dir, name, fallback = j.V1["cpuset"], "cpuset.cpus", ""
	}
	if dir == "" {
		return
	}
	u.cpusets.Job(s, j).Do(func(c *cpusetCache) {
		now := u.now()
		if c.firstAt.IsZero() {
			c.firstAt = now
		}
		if !c.ok || now.Sub(c.readAt) >= cpusetTTL || now.Sub(c.firstAt) < cpusetTTL {
			before := len(f.Problems)
			c.cpus, c.ok = f.CPUList(dir, name)
			if !c.ok && fallback != "" && !f.Gone {
				// cpuset.cpus (the configured set) stands in for an
				// effective set the kernel lacks or that does not parse.
				c.cpus, c.ok = f.CPUList(dir, fallback)
			} else if c.ok && fallback != "" && now.Sub(c.firstAt) < cpusetTTL {
				// A young v2 job whose own set is still empty has not had
				// it written yet: its effective set is the parent's
				// (every core), not its allocation, and once exported it
				// stays in max_over_time (VM B: a one-core job's report
				// and summary said 4 cores). Nothing until it is written;
				// after cpusetTTL an empty own set means the cores are
				// not constrained, and the effective set is the job's.
				if own, ok := f.CPUList(dir, fallback); ok && len(own) == 0 {
					c.cpus, c.ok = nil, false
				}
			}
			c.problems, c.readAt = slices.Clone(f.Problems[before:]), now
		} else {
			// Reported again at each scrape the cache serves (read
			// runs this under f.Collect: they join what it returns).
			f.Problems = append(f.Problems, c.problems...)
		}
		if c.ok {
			us.CPUs, us.Has = c.cpus, us.Has|HasCPUs
		}
	})
}

// sweep drops the cpusets of ended jobs once per scrape, at the first
// usage read of a newer scrape: the grace rule of State keeps every job a
// scrape of the last StateGrace read, so no running scrape loses its own.
func (u *usageReader) sweep(s provide.Scrape) {
	for {
		last := u.swept.Load()
		if s.Serial() <= last {
			return
		}
		if u.swept.CompareAndSwap(last, s.Serial()) {
			u.cpusets.Sweep(s)
			return
		}
	}
}
