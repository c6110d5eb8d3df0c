// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"testing"

	"github.com/jobscope/jobscope/cmd/jobscope-report/report"
	"github.com/jobscope/jobscope/internal/manpage/manpagetest"
)

// jobscope-report(1) lists every flag the report's --help lists, each once,
// and nothing hidden or deprecated; groff reads it without a warning.
func TestManPage(t *testing.T) {
	var out bytes.Buffer
	if err := writeMan(&out); err != nil {
		t.Fatal(err)
	}
	page := out.String()
	manpagetest.Flags(t, page, report.FlagSet(), 20)
	manpagetest.Has(t, page, ".TH JOBSCOPE\\-REPORT 1", ".B jobscope report\n", "/etc/jobscope/report.yml",
		".SH EXIT STATUS", ".BR jobscope (1)")
	manpagetest.Roff(t, page)
}
