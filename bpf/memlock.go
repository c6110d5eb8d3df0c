package bpf

import "golang.org/x/sys/unix"

// raiseMemlock lifts RLIMIT_MEMLOCK, which kernels before 5.11 charge BPF
// memory to. It stands in for cilium/ebpf's rlimit package on purpose: that
// package probes the kernel with bpf() in an init function, so importing it
// made every jobscope process call bpf() before main, controller mode
// included, and the controller unit's seccomp filter killed it (SIGSYS).
func raiseMemlock() error {
	inf := &unix.Rlimit{Cur: unix.RLIM_INFINITY, Max: unix.RLIM_INFINITY}
	return unix.Setrlimit(unix.RLIMIT_MEMLOCK, inf)
}
