// SPDX-License-Identifier: Apache-2.0

package contrib

import (
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// phonyTargets reads the Makefile's .PHONY list, continuation lines included.
func phonyTargets(t *testing.T) []string {
	t.Helper()
	text := strings.ReplaceAll(string(mustRead(t, "../Makefile")), "\\\n", " ")
	var targets []string
	for _, l := range strings.Split(text, "\n") {
		if rest, ok := strings.CutPrefix(l, ".PHONY:"); ok {
			targets = append(targets, strings.Fields(rest)...)
		}
	}
	if len(targets) < 10 {
		t.Fatalf("only %d .PHONY targets read from the Makefile", len(targets))
	}
	return targets
}

// TestMakeHelp: `make help` prints one line for every .PHONY target, from
// the "## " comment on its rule line, so a target added without one fails
// here; and plain `make` still builds.
func TestMakeHelp(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make not installed")
	}
	out, err := exec.Command("make", "-s", "-C", "..", "help").Output()
	if err != nil {
		t.Fatalf("make help: %v\n%s", err, out)
	}
	line := regexp.MustCompile(`^  (\S+) +\S.*$`)
	var listed []string
	for _, l := range strings.Split(strings.TrimRight(string(out), "\n"), "\n") {
		m := line.FindStringSubmatch(l)
		if m == nil {
			t.Errorf("make help: line %q is not \"  target  what it does\"", l)
			continue
		}
		if slices.Contains(listed, m[1]) {
			t.Errorf("make help lists %s twice", m[1])
		}
		listed = append(listed, m[1])
	}
	phony := phonyTargets(t)
	for _, p := range phony {
		if !slices.Contains(listed, p) {
			t.Errorf("make help has no line for %s: add \" ## what it does\" to its rule line", p)
		}
	}
	for _, l := range listed {
		if !slices.Contains(phony, l) {
			t.Errorf("make help lists %s, which is not in .PHONY", l)
		}
	}
	// The default goal is still the build, of both binaries: `jobscope
	// report` runs the jobscope-report next to jobscope.
	dry, err := exec.Command("make", "-n", "-C", "..").Output()
	if err != nil || !strings.Contains(string(dry), "go build") || !strings.Contains(string(dry), "-o bin/jobscope ") ||
		!strings.Contains(string(dry), "-o bin/jobscope-report ./cmd/jobscope-report") {
		t.Errorf("make with no target does not build bin/jobscope and bin/jobscope-report: %v\n%s", err, dry)
	}
}
