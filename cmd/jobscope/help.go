// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/pflag"

	"github.com/jobscope/jobscope/collector"
)

// groupAnnotation is the pflag annotation that puts a flag of cmd's own in
// a help group (inGroup sets it); collectors' flags carry their modes
// instead (collector.ModeAnnotation).
const groupAnnotation = "jobscope.help-group"

const (
	groupCommon     = "common"
	groupNode       = "node"
	groupController = "controller"
)

// flagGroup is one section of --help and of the man page.
type flagGroup struct {
	name, title string
}

// flagGroups are the sections, in the order they are printed.
func flagGroups() []flagGroup {
	return []flagGroup{
		{groupCommon, "Common flags (both modes: web server, logging, paths, metrics level)"},
		{groupNode, "Node mode flags (--mode=node, the default: job discovery and metadata, collectors, eBPF, GPUs, power)"},
		{groupController, "Controller mode flags (--mode=controller: cluster metrics from the Slurm commands)"},
	}
}

// inGroup runs register and puts every flag it adds to fs in group.
func inGroup(fs *pflag.FlagSet, group string, register func()) {
	before := map[string]bool{}
	fs.VisitAll(func(f *pflag.Flag) { before[f.Name] = true })
	register()
	fs.VisitAll(func(f *pflag.Flag) {
		if !before[f.Name] {
			_ = fs.SetAnnotation(f.Name, groupAnnotation, []string{group})
		}
	})
}

// groupOf says which section shows f: where it was registered, else, for
// a collector's flag, the mode its collector is on in (a collector of
// neither mode by default is a node one: it reads the node). "" means no
// section, which TestHelpGroups refuses.
func groupOf(f *pflag.Flag) string {
	if g := f.Annotations[groupAnnotation]; len(g) == 1 {
		return g[0]
	}
	modes, ok := f.Annotations[collector.ModeAnnotation]
	switch {
	case !ok:
		return ""
	case slices.Equal(modes, []string{string(collector.ModeController)}):
		return groupController
	case len(modes) == 0 || slices.Contains(modes, string(collector.ModeNode)):
		return groupNode
	}
	return ""
}

// groupedFlags returns each section's visible flags as a sorted FlagSet,
// the form pflag's usage and the man page writer take.
func groupedFlags(fs *pflag.FlagSet) map[string]*pflag.FlagSet {
	out := map[string]*pflag.FlagSet{}
	for _, g := range flagGroups() {
		out[g.name] = pflag.NewFlagSet(g.name, pflag.ContinueOnError)
		out[g.name].SortFlags = true
	}
	fs.VisitAll(func(f *pflag.Flag) {
		if g := out[groupOf(f)]; g != nil && !f.Hidden {
			g.AddFlag(f)
		}
	})
	return out
}

// subcommand is a word that, first on the command line, runs something
// other than the exporter.
type subcommand struct {
	name, args, help string
	main             func(args []string) int
}

// writeHelp prints --help: the subcommands, then the flags by section.
func writeHelp(w io.Writer, fs *pflag.FlagSet) {
	fmt.Fprintln(w, "Usage: jobscope [FLAG]...   Prometheus exporter for Slurm: node mode (the default) or controller mode")
	for _, c := range subcommands() {
		fmt.Fprintf(w, "       jobscope %s [FLAG]... %s   %s (jobscope %s --help)\n", c.name, c.args, c.help, c.name)
	}
	groups := groupedFlags(fs)
	for _, g := range flagGroups() {
		fmt.Fprintf(w, "\n%s:\n%s", g.title, groups[g.name].FlagUsages())
	}
}

// unknownFlagLine is the one line for a flag nobody registered, with the
// nearest name when one is close enough to be a typo.
func unknownFlagLine(fs *pflag.FlagSet, name string) string {
	var names []string
	fs.VisitAll(func(f *pflag.Flag) {
		if !f.Hidden {
			names = append(names, f.Name)
		}
	})
	if near := nearest(name, names); near != "" {
		return fmt.Sprintf("unknown flag --%s; did you mean --%s?", name, near)
	}
	return fmt.Sprintf("unknown flag --%s (jobscope --help lists the flags)", name)
}

// unknownCommandLine is the one line for an argument that is no flag: the
// exporter takes none, so it is a mistyped subcommand or a lost value.
func unknownCommandLine(arg string) string {
	var names []string
	for _, c := range subcommands() {
		names = append(names, c.name)
	}
	if near := nearest(arg, names); near != "" {
		return fmt.Sprintf("unexpected argument %q; did you mean jobscope %s?", arg, near)
	}
	return fmt.Sprintf("unexpected argument %q: the exporter takes flags only, subcommands are %s (jobscope --help)", arg, strings.Join(names, ", "))
}

// nearest returns the candidate closest to s in edit distance, if that is
// small enough for a typo (a third of the name's length, at least 2), else "".
func nearest(s string, candidates []string) string {
	best, bestD := "", max(2, len(s)/3)+1
	for _, c := range candidates {
		if d := editDistance(s, c); d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance of a and b in bytes (flag names
// are ASCII), with one row of the table kept.
func editDistance(a, b string) int {
	row := make([]int, len(b)+1)
	for j := range row {
		row[j] = j
	}
	for i := 1; i <= len(a); i++ {
		diag := row[0]
		row[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			diag, row[j] = row[j], min(row[j]+1, row[j-1]+1, diag+cost)
		}
	}
	return row[len(b)]
}
