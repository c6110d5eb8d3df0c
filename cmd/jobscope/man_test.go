// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/jobscope/jobscope/gpu"
	"github.com/jobscope/jobscope/internal/manpage"
	"github.com/jobscope/jobscope/internal/manpage/manpagetest"
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
	// The report's flags are in jobscope-report(1), which that binary
	// writes (cmd/jobscope-report's test checks it).
	manpagetest.Flags(t, page, fs, 40)
	// The sections of --help, in its order.
	last := -1
	for _, g := range flagGroups() {
		i := strings.Index(page, ".SS "+manpage.Line(g.title)+"\n")
		if i <= last {
			t.Errorf("section %q missing or out of order", g.title)
		}
		last = i
	}
	manpagetest.Has(t, page, "Default: \\fB:10817\\fR.", "/etc/default/jobscope", "Prolog=/etc/slurm/prolog.d/*",
		".SH JOBSCOPE REPORT", "/etc/jobscope/report.yml", ".BR jobscope\\-report (1)")
	manpagetest.Roff(t, page)
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
