// SPDX-License-Identifier: Apache-2.0

// Command jobscope-report is the users' side of jobscope: a job's efficiency
// report and a user's usage over months, read from Prometheus. It is its
// own binary so that the node daemon, which runs with capabilities on every
// compute node, links none of the report's charting, font or PDF code.
package main

import (
	"os"

	"github.com/jobscope/jobscope/cmd/jobscope-report/report"
	"github.com/jobscope/jobscope/cmd/jobscope-report/service"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "serve" {
		// The report service (docs/report.md, "Report service").
		os.Exit(service.Main(os.Args[2:], os.Stderr))
	}
	os.Exit(report.Main(os.Args[1:], os.Stdout, os.Stderr, isTerminal(os.Stdout)))
}

// isTerminal says whether the report goes to a person (colours, widths).
func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
