// SPDX-License-Identifier: Apache-2.0

// Package manpagetest holds the checks that the tests of both man pages
// (jobscope(1) and jobscope-report(1)) make of the page their binary
// writes, so the two pages are held to the same rules.
package manpagetest

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/jobscope/jobscope/internal/manpage"
)

// entryStart begins every flag's entry that manpage.WriteFlags writes.
const entryStart = ".TP\n\\fB\\-\\-"

// Flags fails t unless page has one entry for each flag of fs that --help
// shows, none for a hidden or deprecated one, and no other flag entries.
// At least minVisible flags must be shown, so a page written from the
// wrong (or an empty) flag set cannot pass.
func Flags(t testing.TB, page string, fs *pflag.FlagSet, minVisible int) {
	t.Helper()
	visible := 0
	fs.VisitAll(func(f *pflag.Flag) {
		n := strings.Count(page, manpage.Entry(f.Name))
		shown := !f.Hidden && f.Deprecated == ""
		switch {
		case !shown && n != 0:
			t.Errorf("hidden or deprecated flag --%s is in the man page", f.Name)
		case shown && n != 1:
			t.Errorf("flag --%s: %d entries, want 1", f.Name, n)
		}
		if shown {
			visible++
		}
	})
	if entries := strings.Count(page, entryStart); visible < minVisible || entries != visible {
		t.Errorf("%d flag entries for %d visible flags (at least %d expected)", entries, visible, minVisible)
	}
}

// Has fails t for each of wants that page lacks.
func Has(t testing.TB, page string, wants ...string) {
	t.Helper()
	for _, want := range wants {
		if !strings.Contains(page, want) {
			t.Errorf("man page lacks %q", want)
		}
	}
}

// Roff fails t when groff warns about page. Without groff it skips t, so
// call it after the test's other checks.
func Roff(t testing.TB, page string) {
	t.Helper()
	groff, err := exec.LookPath("groff")
	if err != nil {
		t.Skip("groff not installed (Debian: groff-base): roff syntax not checked")
	}
	cmd := exec.Command(groff, "-man", "-Tutf8", "-ww", "-z")
	cmd.Stdin = strings.NewReader(page)
	if msg, err := cmd.CombinedOutput(); err != nil || len(msg) > 0 {
		t.Errorf("groff: %v\n%s", err, msg)
	}
}
