// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/jobscope/jobscope/cmd/jobscope-report/report"
)

// The report keeps its own help, under the name users type (`jobscope
// report` runs this binary).
func TestReportHelp(t *testing.T) {
	var out, errb bytes.Buffer
	if code := report.Main([]string{"--help"}, &out, &errb, false); code != 0 ||
		!strings.HasPrefix(out.String()+errb.String(), "Usage: jobscope report") {
		t.Errorf("--help: exit %d\n%s%s", code, out.String(), errb.String())
	}
}
