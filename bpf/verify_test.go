//go:build linux

package bpf

import (
	"errors"
	"os"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/features"
	"github.com/cilium/ebpf/rlimit"
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
// the running kernel, as contrib/verify does in tetragon: a verifier
// rejection names the program and shows the log's tail.
func TestVerifierAcceptsEveryProgram(t *testing.T) {
	needRoot(t)
	if err := rlimit.RemoveMemlock(); err != nil {
		t.Fatal(err)
	}
	for name, load := range map[string]func() (*ebpf.CollectionSpec, error){"jobscope": loadJobscope, "bench": loadBench} {
		spec, err := load()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, sub := range []uint32{0, 1, 2} {
			if v, ok := spec.Variables["v1_subsys"]; ok {
				if err := v.Set(sub); err != nil {
					t.Fatal(err)
				}
			}
			// The MPTCP fallback only where the kernel has the helper.
			if v, ok := spec.Variables["have_mptcp"]; ok && features.HaveProgramHelper(ebpf.CGroupSKB, asm.FnSkcToMptcpSock) == nil {
				if err := v.Set(uint32(1)); err != nil {
					t.Fatal(err)
				}
			}
			coll, err := ebpf.NewCollection(spec)
			if err != nil {
				var ve *ebpf.VerifierError
				if errors.As(err, &ve) {
					t.Fatalf("%s (v1_subsys=%d): verifier: %+v", name, sub, ve)
				}
				t.Fatalf("%s (v1_subsys=%d): %v", name, sub, err)
			}
			for pn, p := range coll.Programs {
				info, err := p.Info()
				if err != nil {
					t.Errorf("%s/%s: %v", name, pn, err)
					continue
				}
				n, _ := info.VerifiedInstructions()
				t.Logf("%s/%s (v1_subsys=%d): %d instructions verified", name, pn, sub, n)
			}
			coll.Close()
			if name == "bench" {
				break
			}
		}
	}
}
