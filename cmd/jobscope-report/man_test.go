// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/jobscope/jobscope/cmd/jobscope-report/report"
	"github.com/jobscope/jobscope/internal/manpage"
)

// jobscope-report(1) lists every flag the report's --help lists, each once,
// and nothing hidden or deprecated; groff reads it without a warning.
func TestManPage(t *testing.T) {
	var out bytes.Buffer
	if err := writeMan(&out); err != nil {
		t.Fatal(err)
	}
	page := out.String()
	visible := 0
	report.FlagSet().VisitAll(func(f *pflag.Flag) {
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
	if visible < 20 || strings.Count(page, ".TP\n\\fB\\-\\-") != visible {
		t.Errorf("%d flag entries for %d visible flags", strings.Count(page, ".TP\n\\fB\\-\\-"), visible)
	}
	for _, want := range []string{".TH JOBSCOPE\\-REPORT 1", ".B jobscope report\n", "/etc/jobscope/report.yml",
		".SH EXIT STATUS", ".BR jobscope (1)"} {
		if !strings.Contains(page, want) {
			t.Errorf("man page lacks %q", want)
		}
	}
	groff, err := exec.LookPath("groff")
	if err != nil {
		t.Skip("groff not installed (Debian: groff-base): roff syntax not checked")
	}
	cmd := exec.Command(groff, "-man", "-Tutf8", "-ww", "-z")
	cmd.Stdin = &out
	if msg, err := cmd.CombinedOutput(); err != nil || len(msg) > 0 {
		t.Errorf("groff: %v\n%s", err, msg)
	}
}
