// SPDX-License-Identifier: Apache-2.0

package contrib

import (
	"bufio"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestSourcesCarryLicence checks that every hand-written source file names
// its licence in an SPDX line near its top: Apache-2.0 for the project, and
// GPL-2.0-only for the eBPF C sources, which declare that licence to the
// kernel. A file without one would leave a site unsure what it may ship.
// Generated files (bpf2go's) and the kernel's vmlinux.h are exempt.
func TestSourcesCarryLicence(t *testing.T) {
	out, err := exec.Command("git", "-C", "..", "ls-files", "*.go", "*.sh", "*.c", "*.h").Output()
	if err != nil {
		t.Skipf("git ls-files: %v (not a git checkout)", err)
	}
	for _, f := range strings.Fields(string(out)) {
		if strings.HasPrefix(f, "headers/") {
			continue
		}
		head := firstLines("../"+f, 12)
		if strings.Contains(head, "// Code generated") {
			continue
		}
		want := "SPDX-License-Identifier: Apache-2.0"
		if strings.HasPrefix(f, "bpf/") && (strings.HasSuffix(f, ".c") || strings.HasSuffix(f, ".h")) {
			want = "SPDX-License-Identifier: GPL-2.0-only"
		}
		if !strings.Contains(head, want) {
			t.Errorf("%s: no %q line near its top", f, want)
		}
	}
}

func firstLines(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	var b strings.Builder
	sc := bufio.NewScanner(f)
	for i := 0; i < n && sc.Scan(); i++ {
		b.WriteString(sc.Text())
		b.WriteByte('\n')
	}
	return b.String()
}
