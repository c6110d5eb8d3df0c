// SPDX-License-Identifier: Apache-2.0

//go:build linux

package bpf

import (
	"errors"
	"os"
	"testing"

	"github.com/cilium/ebpf"
)

// needRoot skips privileged tests with the reason.
func needRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: loads BPF programs and creates cgroups")
	}
	if _, err := os.Stat("/sys/kernel/btf/vmlinux"); err != nil {
		t.Skip("kernel has no BTF (/sys/kernel/btf/vmlinux): CO-RE programs cannot load")
	}
}

// TestVerifierAcceptsEveryProgram loads every program of every object on
// the running kernel, one at a time, as contrib/verify does in tetragon: a
// rejection names the program and shows the verifier log's tail. On older
// kernels (test/kernels) some are expected to fail; here every one must load.
func TestVerifierAcceptsEveryProgram(t *testing.T) {
	needRoot(t)
	if err := raiseMemlock(); err != nil {
		t.Logf("RLIMIT_MEMLOCK stays (%v): kernels from 5.11 do not use it", err)
	}
	for _, sub := range []string{V1None, V1Cpuacct, V1Memory} {
		checks, err := CheckPrograms(sub)
		if err != nil {
			t.Fatalf("v1_subsys=%q: %v", sub, err)
		}
		for _, c := range checks {
			var ve *ebpf.VerifierError
			switch {
			case errors.As(c.Err, &ve):
				t.Errorf("%s (v1 %q): verifier: %+v", c.Name, sub, ve)
			case c.Err != nil:
				t.Errorf("%s (v1 %q): %v", c.Name, sub, c.Err)
			default:
				t.Logf("%s (v1 %q): %d instructions verified", c.Name, sub, c.Insns)
			}
		}
	}
	spec, err := loadBench()
	if err != nil {
		t.Fatal(err)
	}
	coll, err := ebpf.NewCollection(spec)
	if err != nil {
		t.Fatalf("bench: %v", err)
	}
	coll.Close()
}
