// SPDX-License-Identifier: Apache-2.0

package collector

import (
	"fmt"
	"slices"
)

// Level is how much per-job detail the exporter emits (--metrics.level).
// basic keeps a node's per-job series within the budget of
// docs/cardinality.md (at most 25 per job plus one per allocated core);
// full adds the breakdowns: every memory.stat type and memory event, full
// PSI, per-device block IO, processes by state, CPU by executable.
type Level int

const (
	LevelBasic Level = iota
	LevelFull
)

// LevelFlagHelp is the --metrics.level help text.
const LevelFlagHelp = "Per-job detail: basic (at most 25 series per job plus one per allocated core; docs/cardinality.md) or full (adds the memory.stat breakdown, every memory event, full PSI, per-device block IO, processes by state, CPU per executable, syscall IO, network packets). docs/metrics.md marks each metric's level."

// Set reads a --metrics.level value. Level is the flag's own value
// (pflag.Value), so the level is parsed once, as the flags are, and a
// wrong one stops the start like any wrong flag.
func (l *Level) Set(s string) error {
	switch s {
	case "basic":
		*l = LevelBasic
	case "full":
		*l = LevelFull
	default:
		return fmt.Errorf("want one of basic, full")
	}
	return nil
}

// Type names the flag's value as --help shows it.
func (l *Level) Type() string { return "string" }

func (l Level) String() string {
	if l == LevelFull {
		return "full"
	}
	return "basic"
}

// Emits reports whether the level emits any series of d.
func (l Level) Emits(d *Desc) bool { return l >= d.level }

// Full marks a descriptor emitted only at --metrics.level=full.
func (d *Desc) Full() *Desc {
	d.level = LevelFull
	return d
}

// Partly marks a descriptor of which basic emits only part: basic and
// full say what each level emits (for docs/metrics.md).
func (d *Desc) Partly(basic, full string) *Desc {
	d.basicPart, d.fullPart = basic, full
	return d
}

// BasicOnly marks a Partly family of which basic emits the series whose
// label has one of values: Out drops the others below full, so the
// collector reads and sends every series the same way at each level.
func (d *Desc) BasicOnly(label string, values ...string) *Desc {
	i := slices.Index(d.Labels, label)
	if i < 0 || d.basicPart == "" {
		panic(fmt.Sprintf("%s: BasicOnly(%q) needs that label and Partly first", d.Name, label)) // caught by every test
	}
	d.basicOnly, d.basicLabel, d.basicValues = true, i, slices.Clone(values)
	return d
}

// LevelDoc says, for docs/metrics.md, at which level the family appears.
func (d *Desc) LevelDoc() string {
	switch {
	case d.level == LevelFull:
		return "full"
	case d.basicPart != "":
		return "basic: " + d.basicPart + "; full: " + d.fullPart
	}
	return "basic"
}
