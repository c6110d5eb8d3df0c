// SPDX-License-Identifier: Apache-2.0

package collector

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/pflag"

	"github.com/jobscope/jobscope/collector/provide"
)

// Set is the collectors' flags, bound to one FlagSet, ready to build the
// enabled collectors once flags are parsed.
type Set struct {
	factories []Factory
	enabled   map[string]*bool
	builders  map[string]func(env *Env) (Collector, error)
	fs        *pflag.FlagSet
}

// RegisterFlags adds --collector.<name> and each collector's own flags.
// Defaults shown are node mode's; in controller mode a collector whose flag
// was not given follows that mode's default.
func RegisterFlags(fs *pflag.FlagSet, factories []Factory) *Set {
	s := &Set{factories: factories, enabled: map[string]*bool{}, builders: map[string]func(*Env) (Collector, error){}, fs: fs}
	for _, f := range factories {
		modes := ""
		for i, m := range f.DefaultIn {
			if i > 0 {
				modes += ", "
			}
			modes += string(m)
		}
		def := "on by default in " + modes + " mode"
		if modes == "" {
			def = "off by default"
		}
		before := flagNames(fs)
		s.enabled[f.Name] = fs.Bool("collector."+f.Name, f.DefaultOn(ModeNode),
			fmt.Sprintf("%s (%s; the default shown is node mode's).", f.Help, def))
		if f.Flags != nil {
			s.builders[f.Name] = f.Flags(fs)
		}
		// Each flag says the modes of the collector that registered it,
		// so --help and the man page group it without a list by hand.
		inModes := make([]string, len(f.DefaultIn))
		for i, m := range f.DefaultIn {
			inModes[i] = string(m)
		}
		fs.VisitAll(func(fl *pflag.Flag) {
			if !before[fl.Name] {
				_ = fs.SetAnnotation(fl.Name, ModeAnnotation, inModes)
				_ = fs.SetAnnotation(fl.Name, OwnerAnnotation, []string{f.Name})
			}
		})
	}
	return s
}

// ModeAnnotation is the pflag annotation RegisterFlags puts on every flag a
// collector registers: the modes in which that collector is on by default.
const ModeAnnotation = provide.ModeAnnotation

// OwnerAnnotation is the pflag annotation RegisterFlags puts on every flag a
// collector registers: the collector's name, whose namespace
// (--collector.<name>.*) the flag belongs in.
const OwnerAnnotation = "jobscope.collector"

func flagNames(fs *pflag.FlagSet) map[string]bool {
	names := map[string]bool{}
	fs.VisitAll(func(f *pflag.Flag) { names[f.Name] = true })
	return names
}

// Enabled returns the names of the collectors on in mode m.
func (s *Set) Enabled(m Mode) []string {
	var names []string
	for _, f := range s.factories {
		on := f.DefaultOn(m)
		if fl := s.fs.Lookup("collector." + f.Name); fl != nil && fl.Changed {
			on = *s.enabled[f.Name]
		}
		if on {
			names = append(names, f.Name)
		}
	}
	return names
}

// NeedsJobs reports whether any of the named collectors uses job discovery.
func (s *Set) NeedsJobs(names []string) bool {
	for _, f := range s.factories {
		for _, n := range names {
			if f.Name == n && f.NeedsJobs {
				return true
			}
		}
	}
	return false
}

// Build constructs the named collectors. A collector that cannot be built
// (no privileges, no hardware) is reported once and kept as a collector that
// fails every scrape, so its success metric says 0 while the others run.
func (s *Set) Build(env *Env, names []string, report func(name string, err error)) map[string]Collector {
	out := map[string]Collector{}
	for _, n := range names {
		b := s.builders[n]
		if b == nil {
			report(n, fmt.Errorf("collector %q has no constructor", n))
			continue
		}
		c, err := b(env)
		if err != nil {
			report(n, err)
			c = unavailable{err}
		}
		out[n] = c
	}
	return out
}

// unavailable stands in for a collector whose constructor failed.
type unavailable struct{ err error }

func (u unavailable) Collect(*Scrape, chan<- prometheus.Metric) error {
	return fmt.Errorf("%w: %w", ErrUnavailable, u.err) // u.err's cause labels the count
}

// BadFlag marks a constructor's error as a wrong option value or start-up
// setting: the exporter then stops at start (exit status 2) rather than
// running with the collector off.
func BadFlag(err error) error { return &FlagError{Err: err} }

// FlagError is an error BadFlag marked.
type FlagError struct{ Err error }

func (e *FlagError) Error() string { return e.Err.Error() }
func (e *FlagError) Unwrap() error { return e.Err }
