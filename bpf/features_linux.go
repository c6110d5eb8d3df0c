// SPDX-License-Identifier: Apache-2.0

//go:build linux

package bpf

import (
	"errors"
	"fmt"
	"os"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/features"
	"golang.org/x/sys/unix"
)

// kernelFeatures probes the running kernel.
type kernelFeatures struct{}

func (kernelFeatures) BTF() error {
	if _, err := os.Stat("/sys/kernel/btf/vmlinux"); err != nil {
		return fmt.Errorf("the kernel has no BTF (/sys/kernel/btf/vmlinux: %v); CO-RE programs need CONFIG_DEBUG_INFO_BTF=y", err)
	}
	if _, err := btf.LoadKernelSpec(); err != nil {
		return fmt.Errorf("reading the kernel's BTF: %w", err)
	}
	return nil
}

// TaskStorage loads the smallest program that uses the feature: a
// tp_btf/sched_switch program looking up the outgoing task's storage. The map
// type alone would pass on 5.11, where tracing programs may not use it.
func (kernelFeatures) TaskStorage() error {
	if err := features.HaveMapType(ebpf.TaskStorage); err != nil {
		return fmt.Errorf("no task storage maps (kernel 5.11+): %w", err)
	}
	m, err := ebpf.NewMap(&ebpf.MapSpec{
		Type: ebpf.TaskStorage, KeySize: 4, ValueSize: 8, Flags: unix.BPF_F_NO_PREALLOC,
		Key: &btf.Int{Name: "int", Size: 4, Encoding: btf.Signed}, Value: &btf.Int{Name: "u64", Size: 8},
	})
	if err != nil {
		return fmt.Errorf("creating a task storage map: %w", err)
	}
	defer m.Close()
	p, err := ebpf.NewProgram(&ebpf.ProgramSpec{
		Type: ebpf.Tracing, AttachType: ebpf.AttachTraceRawTp, AttachTo: "sched_switch", License: "GPL",
		Instructions: asm.Instructions{
			asm.LoadMem(asm.R2, asm.R1, 8, asm.DWord), // prev
			asm.LoadMapPtr(asm.R1, m.FD()),
			asm.Mov.Imm(asm.R3, 0),
			asm.Mov.Imm(asm.R4, 0),
			asm.FnTaskStorageGet.Call(),
			asm.Mov.Imm(asm.R0, 0),
			asm.Return(),
		},
	})
	if err != nil {
		var ve *ebpf.VerifierError
		if errors.As(err, &ve) {
			return fmt.Errorf("tracing programs cannot use task storage (kernel 5.12+): %w", err)
		}
		return fmt.Errorf("probing task storage in tracing programs: %w", err)
	}
	return p.Close()
}

// LiveCPU probes bpf_map_lookup_percpu_elem, the newer of the two needs; a
// kernel that has it and still refuses fold_running is caught at load.
func (kernelFeatures) LiveCPU() error {
	if err := features.HaveProgramHelper(ebpf.SocketFilter, asm.FnMapLookupPercpuElem); err != nil {
		return fmt.Errorf("no bpf_map_lookup_percpu_elem (kernel 5.19+): %w", err)
	}
	return nil
}

// KernelFeatures probes the running kernel (what Load uses when
// Config.Features is nil).
func KernelFeatures() Features { return kernelFeatures{} }
