// SPDX-License-Identifier: Apache-2.0

// Command jobscope-report is the users' side of jobscope: a job's efficiency
// report and a user's usage over months, read from Prometheus. It is its
// own binary so that the node daemon, which runs with capabilities on every
// compute node, links none of the report's charting, font or PDF code.
package main

import (
	"fmt"
	"os"

	"github.com/jobscope/jobscope/cmd/jobscope-report/report"
	"github.com/jobscope/jobscope/cmd/jobscope-report/service"
)

// Set at build time with -ldflags "-X main.version=...", as jobscope's.
var version = "dev"

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	// The packages' jobscope-report(1), written from the flags this binary
	// parses (hidden, like jobscope --help-man).
	if len(args) == 1 && args[0] == "--help-man" {
		if err := writeMan(os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		return 0
	}
	if len(args) > 0 && args[0] == "serve" {
		// The report service (docs/report.md, "Report service").
		return service.Main(args[1:], os.Stderr)
	}
	return report.Main(args, os.Stdout, os.Stderr, isTerminal(os.Stdout))
}

// isTerminal says whether the report goes to a person (colours, widths).
func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
