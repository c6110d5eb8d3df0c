// SPDX-License-Identifier: Apache-2.0

package bpf

import "golang.org/x/sys/unix"

// raiseMemlock lifts RLIMIT_MEMLOCK, which kernels before 5.11 charge BPF
// memory to. It stands in for cilium/ebpf's rlimit package on purpose: that
// package probes the kernel with bpf() in an init function, so importing it
// made every jobscope process call bpf() before main, controller mode
// included, and the controller unit's seccomp filter killed it (SIGSYS).
// Kernels from 5.11 charge the memory cgroup instead, so a failure here
// only matters when a load fails too, and the loader then says so.
func raiseMemlock() error {
	inf := &unix.Rlimit{Cur: unix.RLIM_INFINITY, Max: unix.RLIM_INFINITY}
	err := unix.Setrlimit(unix.RLIMIT_MEMLOCK, inf)
	if err == nil {
		return nil
	}
	// Without CAP_SYS_RESOURCE the soft limit can still rise to the hard one.
	var cur unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_MEMLOCK, &cur) == nil && cur.Cur < cur.Max {
		cur.Cur = cur.Max
		_ = unix.Setrlimit(unix.RLIMIT_MEMLOCK, &cur)
	}
	return err
}
