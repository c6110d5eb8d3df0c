// SPDX-License-Identifier: Apache-2.0

// Package manpage writes flag sets as roff for man pages. The daemon
// (jobscope(1)) and the report (jobscope-report(1)) are separate binaries
// that each write their own page from the flags they parse; this package
// is what they share, so both pages escape and lay out flags alike.
package manpage

import (
	"io"
	"strings"

	"github.com/spf13/pflag"
)

// WriteFlags writes one .TP entry per flag that --help shows, with its
// value name and a default when the default says something.
func WriteFlags(w io.StringWriter, fs *pflag.FlagSet) {
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Hidden || f.Deprecated != "" { // as --help does
			return
		}
		name, usage := pflag.UnquoteUsage(f)
		_, _ = w.WriteString(".TP\n\\fB\\-\\-" + Roff(f.Name) + "\\fR")
		if name != "" {
			_, _ = w.WriteString("=\\fI" + Roff(name) + "\\fR")
		}
		_, _ = w.WriteString("\n" + Line(usage) + "\n")
		if def := f.DefValue; !zeroDefault(def) {
			_, _ = w.WriteString("Default: \\fB" + Roff(def) + "\\fR.\n")
		}
	})
}

// Entry is the start of flag name's entry, as WriteFlags writes it: what a
// test looks for.
func Entry(name string) string {
	return ".TP\n\\fB\\-\\-" + Roff(name) + "\\fR"
}

// zeroDefault mirrors what --help leaves out: defaults that say nothing.
func zeroDefault(v string) bool {
	switch v {
	case "", "0", "0s", "[]", "false", "<nil>":
		return true
	}
	return false
}

// Roff escapes text for a man page: backslashes, and hyphens that are
// minus signs in flag names and paths.
func Roff(s string) string {
	return strings.NewReplacer(`\`, `\e`, "-", `\-`).Replace(s)
}

// Line escapes s and keeps a leading dot or quote from reading as a
// request.
func Line(s string) string {
	s = Roff(s)
	if strings.HasPrefix(s, ".") || strings.HasPrefix(s, "'") {
		s = `\&` + s
	}
	return s
}
