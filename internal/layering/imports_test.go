// SPDX-License-Identifier: Apache-2.0

package layering

import (
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/jobscope/jobscope"

// layer ranks a package of the module: a package may import its own layer
// or lower ones, never a higher one.
func layer(pkg string) (int, string) {
	p := strings.TrimPrefix(pkg, module+"/")
	switch {
	case p == "discovery" || strings.HasPrefix(p, "discovery/"):
		return 1, "job discovery"
	case p == "collector":
		return 2, "collector framework"
	case strings.HasPrefix(p, "collector/registry"):
		return 4, "collector registry"
	case strings.HasPrefix(p, "collector/"):
		return 3, "collector"
	case strings.HasPrefix(p, "cmd/"):
		return 5, "command"
	case strings.HasPrefix(p, "test/gen/"):
		// Generators of fixtures that benchmarks of every layer use.
		return 0, "test data generator"
	case p == "contrib" || strings.HasPrefix(p, "test/"):
		// The checks of shipped files and the bench tools and generators
		// may use any product package; nothing imports them.
		return 6, "test tool"
	}
	return 0, "reader" // bpf, gpu, power, slurmcli, cgroupfs, internal/...
}

// TestImportLayers reads every package's imports, tests included, from
// `go list` and fails on an edge that points up: a hardware, Slurm or
// cgroupfs reader importing job discovery or a collector, discovery
// importing a collector, the framework importing a collector, a collector
// importing the registry or the command.
func TestImportLayers(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-test", "-f", "{{.ImportPath}}|{{join .Imports \" \"}}", module+"/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	checked := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkg, imports, _ := strings.Cut(line, "|")
		pkg, _, _ = strings.Cut(pkg, " ") // "p [p.test]" is p's test variant
		if !strings.HasPrefix(pkg, module) || strings.HasSuffix(pkg, ".test") {
			continue
		}
		from, fromName := layer(pkg)
		for _, imp := range strings.Fields(imports) {
			imp, _, _ = strings.Cut(imp, " ")
			if !strings.HasPrefix(imp, module) {
				continue
			}
			checked++
			if to, toName := layer(imp); to > from {
				t.Errorf("%s (%s) imports %s (%s): an edge that points up", pkg, fromName, imp, toName)
			}
		}
	}
	if checked < 50 {
		t.Fatalf("only %d module imports seen: go list output not understood", checked)
	}
}

// A package that imports a collector must fail the rule (the test cannot
// pass vacuously).
func TestLayerOrder(t *testing.T) {
	for _, c := range []struct{ low, high string }{
		{"gpu", "discovery"}, {"gpu", "collector/gpu"}, {"power", "collector"}, {"discovery", "collector"},
		{"cgroupfs", "collector/cgroup"}, {"internal/poll", "collector/power"},
		{"collector", "collector/cgroup"}, {"collector/cgroup", "collector/registry"}, {"collector/registry", "cmd/jobscope"},
	} {
		lo, _ := layer(module + "/" + c.low)
		hi, _ := layer(module + "/" + c.high)
		if lo >= hi {
			t.Errorf("%s must sit below %s", c.low, c.high)
		}
	}
}
