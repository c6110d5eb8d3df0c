// SPDX-License-Identifier: Apache-2.0

package collector

import (
	"slices"

	"github.com/spf13/pflag"

	"github.com/jobscope/jobscope/collector/provide"
)

// RegisterProviderFlags adds each provider's own flags, marked (for --help
// and the man page) with the modes of the collectors that need it: a
// provider's flags show where the collectors using it run.
func (s *Set) RegisterProviderFlags(ps *provide.Set) {
	for _, p := range ps.Providers() {
		var modes []string
		for _, f := range s.factories {
			for _, n := range f.Needs {
				if n != p.Name() {
					continue
				}
				for _, m := range f.DefaultIn {
					if !slices.Contains(modes, string(m)) {
						modes = append(modes, string(m))
					}
				}
			}
		}
		before := flagNames(s.fs)
		p.Flags(s.fs)
		s.fs.VisitAll(func(fl *pflag.Flag) {
			if !before[fl.Name] && fl.Annotations[ModeAnnotation] == nil {
				_ = s.fs.SetAnnotation(fl.Name, ModeAnnotation, modes)
			}
		})
	}
}

// Needs lists the providers the named collectors need, each once.
func (s *Set) Needs(names []string) []string {
	var out []string
	for _, f := range s.factories {
		if !slices.Contains(names, f.Name) {
			continue
		}
		for _, n := range f.Needs {
			if !slices.Contains(out, n) {
				out = append(out, n)
			}
		}
	}
	return out
}
