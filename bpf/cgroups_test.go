// SPDX-License-Identifier: Apache-2.0

package bpf

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseHierarchy(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "testdata", "ebpf", "proc-cgroups-hybrid"))
	if err != nil {
		t.Fatal(err)
	}
	for ctrl, want := range map[string]uint32{"cpuacct": 2, "memory": 4, "pids": 8} {
		got, err := ParseHierarchy(bytes.NewReader(b), ctrl)
		if err != nil || got != want {
			t.Errorf("%s: got %d, %v; want %d", ctrl, got, err, want)
		}
	}
	// Bound to no v1 hierarchy (on v2 or unused), absent, garbled.
	for _, ctrl := range []string{"hugetlb", "rdma", "#subsys_name"} {
		if got, err := ParseHierarchy(bytes.NewReader(b), ctrl); err == nil {
			t.Errorf("%s: got %d, want an error", ctrl, got)
		}
	}
	if _, err := ParseHierarchy(strings.NewReader("cpuacct x 1 1\n"), "cpuacct"); err == nil {
		t.Error("non-numeric hierarchy accepted")
	}
}

func FuzzParseHierarchy(f *testing.F) {
	b, err := os.ReadFile(filepath.Join("..", "testdata", "ebpf", "proc-cgroups-hybrid"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(string(b), "cpuacct")
	f.Add("#subsys_name\thierarchy\tnum_cgroups\tenabled\ncpuacct\t0\t1\t1\n", "cpuacct")
	f.Fuzz(func(t *testing.T, text, ctrl string) {
		id, err := ParseHierarchy(strings.NewReader(text), ctrl)
		if err == nil && id == 0 {
			t.Errorf("hierarchy 0 returned without an error")
		}
	})
}
