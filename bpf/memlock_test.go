// SPDX-License-Identifier: Apache-2.0

package bpf

import (
	"os/exec"
	"strings"
	"testing"
)

// cilium/ebpf's rlimit package calls bpf() from an init function; the
// controller unit's seccomp filter kills a process that does (SIGSYS), so
// the binary must not link it.
func TestBinaryHasNoInitTimeBPFProbe(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/jobscope/jobscope/cmd/jobscope").Output()
	if err != nil {
		t.Skipf("go list: %v", err)
	}
	for _, p := range strings.Fields(string(out)) {
		if p == "github.com/cilium/ebpf/rlimit" {
			t.Fatal("cmd/jobscope links github.com/cilium/ebpf/rlimit, whose init calls bpf(): use raiseMemlock")
		}
	}
}
