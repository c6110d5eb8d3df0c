// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/jobscope/jobscope/gpu"
	"github.com/jobscope/jobscope/internal/manpage"
)

// The man page lists every flag --help lists, each once, and nothing
// hidden or deprecated; groff reads it without a warning.
func TestManPage(t *testing.T) {
	fs, _, _ := newFlagSet()
	var out bytes.Buffer
	if err := writeMan(&out, fs); err != nil {
		t.Fatal(err)
	}
	page := out.String()
	visible := 0
	// The report's flags are in jobscope-report(1), which that binary
	// writes (cmd/jobscope-report's test checks it).
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
	if visible < 40 || strings.Count(page, ".TP\n\\fB\\-\\-") != visible {
		t.Errorf("%d flag entries for %d visible flags", strings.Count(page, ".TP\n\\fB\\-\\-"), visible)
	}
	// The sections of --help, in its order.
	last := -1
	for _, g := range flagGroups() {
		i := strings.Index(page, ".SS "+manpage.Line(g.title)+"\n")
		if i <= last {
			t.Errorf("section %q missing or out of order", g.title)
		}
		last = i
	}
	for _, want := range []string{"Default: \\fB:10817\\fR.", "/etc/default/jobscope", "Prolog=/etc/slurm/prolog.d/*",
		".SH JOBSCOPE REPORT", "/etc/jobscope/report.yml", ".BR jobscope\\-report (1)"} {
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

// The static package's binary must say it has no GPU support.
func TestVersionLine(t *testing.T) {
	line := versionLine()
	if !strings.HasPrefix(line, "jobscope "+version+" (revision "+revision) {
		t.Errorf("version line %q", line)
	}
	if gpu.NVMLBuilt != strings.Contains(line, "GPU support: NVML") || gpu.NVMLBuilt == strings.Contains(line, "no GPU support") {
		t.Errorf("version line %q disagrees with NVMLBuilt=%v", line, gpu.NVMLBuilt)
	}
	if cgoBuild() == strings.Contains(line, "static") {
		t.Errorf("version line %q disagrees with cgo=%v", line, cgoBuild())
	}
}
