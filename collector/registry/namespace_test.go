// SPDX-License-Identifier: Apache-2.0

package registry

import (
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/jobscope/jobscope/collector"
	"github.com/jobscope/jobscope/internal/flagval"
)

// providerFlags are the flags the cluster collectors register for the
// Slurm command cache they share: the snapshot's, not one collector's. They
// leave this list when the providers move out of the collectors; the list
// names each, so that a new flag outside a namespace fails here.
var providerFlags = []string{"slurm.poll-interval", "slurm.max-age", "slurm.command-timeout", "slurm.format",
	"slurm.bin-dir", "slurm.command-path"}

// TestFlagNamespaces: a collector's flags are --collector.<name> and
// --collector.<name>.*, plus deprecated old names that stand for one of
// them. A flag elsewhere is a collector reaching into another's (or cmd's)
// namespace.
func TestFlagNamespaces(t *testing.T) {
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	collector.RegisterFlags(fs, Factories())
	for _, e := range outsideNamespace(fs) {
		t.Error(e)
	}
	if n := len(fs.Lookup("power.rapl").Annotations[flagval.AliasAnnotation]); n != 1 {
		t.Error("--power.rapl is no alias: the deprecated names are not checked")
	}
}

// outsideNamespace says which flags of fs are outside the namespace of the
// collector that registered them.
func outsideNamespace(fs *pflag.FlagSet) []string {
	var errs []string
	fs.VisitAll(func(f *pflag.Flag) {
		owner := f.Annotations[collector.OwnerAnnotation]
		if len(owner) != 1 {
			errs = append(errs, "--"+f.Name+": no owning collector")
			return
		}
		ns := "collector." + owner[0]
		in := func(name string) bool { return name == ns || strings.HasPrefix(name, ns+".") }
		switch target := f.Annotations[flagval.AliasAnnotation]; {
		case in(f.Name):
		case len(target) == 1 && in(target[0]) && f.Deprecated != "":
		case slices.Contains(providerFlags, f.Name):
		default:
			errs = append(errs, "--"+f.Name+", registered by the "+owner[0]+" collector, is outside --"+ns+".*")
		}
	})
	return errs
}

// TestNamespaceCheckFails: the check sees a flag outside the namespace, and
// an alias of a flag outside it, and passes the collector's own.
func TestNamespaceCheckFails(t *testing.T) {
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	collector.RegisterFlags(fs, []collector.Factory{{Name: "x", Flags: func(fs *pflag.FlagSet) func(*collector.Env) (collector.Collector, error) {
		fs.Int("x.depth", 1, "")
		fs.Int("collector.x.width", 1, "")
		flagval.Alias(fs, "x.width", "collector.x.width")
		flagval.Alias(fs, "old.depth", "x.depth")
		return nil
	}}})
	got := outsideNamespace(fs)
	if len(got) != 2 || !strings.Contains(got[0], "--old.depth,") || !strings.Contains(got[1], "--x.depth,") {
		t.Errorf("outside the namespace: %q, want --old.depth (an alias of --x.depth) and --x.depth", got)
	}
}
