// SPDX-License-Identifier: Apache-2.0

package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"

	"github.com/jobscope/jobscope/internal/termsafe"
)

// reportBinary is the report's own program. The daemon runs with
// capabilities on every compute node, so it links none of the report's
// charting, font and PDF code: `jobscope report` hands over to this binary.
const reportBinary = "jobscope-report"

// exitNotInstalled is the shell's status for a command not found.
const exitNotInstalled = 127

// runReport replaces this process with jobscope-report ARGS: the same
// standard streams, environment and exit status, no process in between.
// It returns only when that cannot happen.
func runReport(args []string, stderr io.Writer) int {
	self, _ := os.Executable()
	path, err := findReport(self, os.Getenv("PATH"))
	if err != nil {
		fmt.Fprintf(stderr, "jobscope report: %v\n", err)
		return exitNotInstalled
	}
	err = syscall.Exec(path, append([]string{reportBinary}, args...), os.Environ())
	fmt.Fprintf(stderr, "jobscope report: cannot run %s: %v\n", termsafe.String(path), err)
	return exitNotInstalled
}

// findReport looks next to the daemon's own executable first (a package's
// /usr/bin, a checkout's bin/), so the report comes from the same build;
// then in search, a PATH list.
func findReport(self, search string) (string, error) {
	// The daemon itself, installed under the report's name (as the e2e test
	// once did), would exec itself for ever: it is never the report.
	selfInfo, _ := os.Stat(self)
	isReport := func(p string) bool {
		fi, err := os.Stat(p)
		if err != nil || !fi.Mode().IsRegular() || fi.Mode()&0o111 == 0 {
			return false
		}
		return selfInfo == nil || !os.SameFile(fi, selfInfo)
	}
	if self != "" {
		if next := filepath.Join(filepath.Dir(self), reportBinary); isReport(next) {
			return next, nil
		}
	}
	for _, dir := range filepath.SplitList(search) {
		if dir == "" || !filepath.IsAbs(dir) {
			// "" and relative entries name the working directory, which a
			// user's job may own: not where the report comes from.
			continue
		}
		if p := filepath.Join(dir, reportBinary); isReport(p) {
			return p, nil
		}
	}
	return "", errors.New(reportBinary + " is not installed (not next to " + displaySelf(self) +
		" nor in PATH): install the jobscope or jobscope-static package (both hold /usr/bin/jobscope-report), or make build")
}

// displaySelf names the daemon's executable for the error line; a copy of
// it can sit under any name a user picks, so the name is made safe for a
// terminal.
func displaySelf(self string) string {
	if self == "" {
		return "jobscope"
	}
	return termsafe.String(self)
}
