// SPDX-License-Identifier: Apache-2.0

package layering

import (
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/jobscope/jobscope"

// The layers, lowest first. A package may import its own layer or lower
// ones, never a higher one (and the rules of violation on top).
const (
	layerReader    = iota // bpf, gpu, power, slurmcli, cgroupfs, internal/..., fixture generators
	layerDiscovery        // job discovery and identity
	layerProvider         // collector/provide (the contract) and collector/provide/* (one shared input each)
	layerFramework        // collector, and collector/collectortest for the collectors' tests
	layerCollector        // collector/<name>
	layerRegistry         // collector/registry
	layerCommand          // cmd/...
	layerTool             // contrib and test/...: may use any product package
)

// layer ranks a package of the module.
func layer(pkg string) (int, string) {
	p := strings.TrimPrefix(pkg, module+"/")
	switch {
	case p == "discovery" || strings.HasPrefix(p, "discovery/"):
		return layerDiscovery, "job discovery"
	case p == "collector/provide":
		return layerProvider, "provider contract"
	case strings.HasPrefix(p, "collector/provide/"):
		return layerProvider, "provider"
	case p == "collector" || p == "collector/collectortest":
		return layerFramework, "collector framework"
	case p == "collector/registry" || strings.HasPrefix(p, "collector/registry/"):
		return layerRegistry, "collector registry"
	case strings.HasPrefix(p, "collector/"):
		return layerCollector, "collector"
	case strings.HasPrefix(p, "cmd/"):
		return layerCommand, "command"
	case strings.HasPrefix(p, "test/gen/"):
		// Generators of fixtures that benchmarks of every layer use.
		return layerReader, "test data generator"
	case p == "contrib" || strings.HasPrefix(p, "test/"):
		// The checks of shipped files and the bench tools may use any
		// product package; nothing imports them.
		return layerTool, "test tool"
	case strings.HasPrefix(p, "internal/"):
		return layerReader, "library"
	}
	return layerReader, "reader" // bpf, gpu, power, slurmcli, cgroupfs
}

// collectorName is X of collector/X/..., "" for any other package.
func collectorName(pkg string) string {
	p := strings.TrimPrefix(pkg, module+"/")
	if l, _ := layer(pkg); l != layerCollector {
		return ""
	}
	name, _, _ := strings.Cut(strings.TrimPrefix(p, "collector/"), "/")
	return name
}

// violation says why the edge from -> to breaks the layering, or "".
func violation(from, to string) string {
	fl, fname := layer(from)
	tl, tname := layer(to)
	switch {
	case tl > fl:
		return "an edge that points up (" + fname + " imports " + tname + ")"
	case fl == layerFramework && tl == layerReader && tname == "reader":
		// The framework knows the shared inputs through the providers'
		// contract, not the hardware or Slurm readers behind them.
		return "the collector framework imports a hardware reader"
	case fl == layerFramework && tl == layerProvider && tname == "provider":
		return "the collector framework imports a provider (only the provide contract)"
	case fl == layerCollector && tl == layerCollector && collectorName(from) != collectorName(to):
		// What two collectors share is a provider; a collector never
		// reaches into another.
		return "a collector imports another collector"
	}
	return ""
}

// TestImportLayers reads every package's imports, tests included, from
// `go list` and fails on an edge violation refuses.
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
		for _, imp := range strings.Fields(imports) {
			imp, _, _ = strings.Cut(imp, " ")
			if !strings.HasPrefix(imp, module) {
				continue
			}
			checked++
			if why := violation(pkg, imp); why != "" {
				t.Errorf("%s imports %s: %s", pkg, imp, why)
			}
		}
	}
	if checked < 50 {
		t.Fatalf("only %d module imports seen: go list output not understood", checked)
	}
}

// Each rule bites: these edges must be refused, and the ones the design
// relies on allowed (the test cannot pass vacuously).
func TestLayerOrder(t *testing.T) {
	for _, c := range []struct{ from, to string }{
		// Upward edges.
		{"gpu", "discovery"}, {"gpu", "collector/gpu"}, {"power", "collector"}, {"discovery", "collector"},
		{"cgroupfs", "collector/cgroup"}, {"internal/poll", "collector/power"}, {"slurmcli", "collector/provide/gpus"},
		{"discovery", "collector/provide"}, {"collector/provide/jobcgroup", "collector"}, {"collector/provide", "collector/registry"},
		{"collector", "collector/cgroup"}, {"collector/collectortest", "collector/power"},
		{"collector/cgroup", "collector/registry"}, {"collector/registry", "cmd/jobscope"},
		// The framework and hardware.
		{"collector", "bpf"}, {"collector", "gpu"}, {"collector", "cgroupfs"}, {"collector", "slurmcli"},
		{"collector", "power"}, {"collector", "collector/provide/ebpfprogs"}, {"collector/collectortest", "cgroupfs"},
		// A collector and another.
		{"collector/power", "collector/gpu"}, {"collector/ebpf", "collector/cgroup"}, {"collector/cluster", "collector/process"},
	} {
		if violation(module+"/"+c.from, module+"/"+c.to) == "" {
			t.Errorf("%s -> %s must be refused", c.from, c.to)
		}
	}
	for _, c := range []struct{ from, to string }{
		{"collector", "discovery"}, {"collector", "collector/provide"}, {"collector", "internal/testutil"},
		{"collector/power", "collector/provide/gpus"}, {"collector/power", "power"}, {"collector/cgroup", "collector/collectortest"},
		{"collector/cgroup", "collector"}, {"collector/provide/gpus", "gpu"}, {"collector/provide/jobcgroup", "discovery"},
		{"collector/registry", "collector/cgroup"}, {"cmd/jobscope", "collector/registry"}, {"cmd/jobscope", "collector/provide"},
	} {
		if why := violation(module+"/"+c.from, module+"/"+c.to); why != "" {
			t.Errorf("%s -> %s must be allowed: %s", c.from, c.to, why)
		}
	}
}
