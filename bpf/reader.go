// SPDX-License-Identifier: Apache-2.0

package bpf

import "time"

// Key names a job cgroup: Hierarchy 0 is cgroup v2, where CgroupID is the
// job directory's inode; on v1 it is the hierarchy id from /proc/cgroups and
// the inode of the job directory in that hierarchy.
type Key struct {
	Hierarchy uint32
	CgroupID  uint64
}

// Counters are one job's totals since its entry was made.
type Counters struct {
	// CPUNs is the job's CPU time on each CPU, indexed by CPU number.
	CPUNs []uint64
	// Per-task IO accounting (/proc/<pid>/io fields) of the job's tasks.
	RChar, WChar, SyscR, SyscW, ReadBytes, WriteBytes uint64
	// Network: bytes and packets of sockets created in the job.
	RxBytes, TxBytes, RxPackets, TxPackets uint64
	// Since is when the programs began counting for the job: its first
	// event after they were attached (CPU time before it is not in CPUNs).
	// Zero when unknown.
	Since time.Time
}

// ProgramStats are the kernel's statistics of one program.
type ProgramStats struct {
	Name            string
	Runtime         time.Duration
	RunCount        uint64
	RecursionMisses uint64
}

// Self describes the programs and maps themselves.
type Self struct {
	Attached  int
	Entries   int // entries in the job counter map
	Capacity  int
	Overflows uint64 // job entries that could not be added (map full)
	Dying     uint64 // slices dropped for a job cgroup being removed
	Seeded    uint64 // tasks seeded at attach
	MPTCP     uint64 // packets attributed through an MPTCP parent socket
	Network   bool   // network programs attached
	StatsOn   bool   // kernel BPF statistics are on
	Programs  []ProgramStats
}

// Snapshot is one read of the maps.
type Snapshot struct {
	Jobs map[Key]*Counters
	Self Self
}

// Reader reads the maps; the collector uses it so tests can hand it canned
// snapshots.
type Reader interface {
	Read() (*Snapshot, error)
}
