// SPDX-License-Identifier: Apache-2.0

//go:build linux

package bpf

import (
	"bufio"
	"os"
	"strconv"
	"strings"
)

// Capability bits (linux/capability.h).
const (
	capSysAdmin = 21
	capPerfmon  = 38
	capBPF      = 39
)

// missingCaps says which capabilities loading tracing programs lacks ("" if
// none). It is checked before loading because, without them, the kernel's
// answers read like missing features rather than missing rights.
func missingCaps() string {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return "" // cannot tell: let the load decide
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		v, ok := strings.CutPrefix(sc.Text(), "CapEff:")
		if !ok {
			continue
		}
		eff, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
		if err != nil {
			return ""
		}
		has := func(c uint) bool { return eff&(1<<c) != 0 }
		if has(capSysAdmin) || (has(capBPF) && has(capPerfmon)) {
			return ""
		}
		return "CAP_BPF and CAP_PERFMON (or CAP_SYS_ADMIN)"
	}
	return ""
}
