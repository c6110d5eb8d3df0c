// SPDX-License-Identifier: Apache-2.0

package collector

import "fmt"

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

// ParseLevel reads a --metrics.level value.
func ParseLevel(s string) (Level, error) {
	switch s {
	case "basic", "":
		return LevelBasic, nil
	case "full":
		return LevelFull, nil
	}
	return LevelBasic, fmt.Errorf("--metrics.level must be basic or full, got %q", s)
}

func (l Level) String() string {
	if l == LevelFull {
		return "full"
	}
	return "basic"
}

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
