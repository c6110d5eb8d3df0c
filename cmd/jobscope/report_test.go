// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// fakeReport writes an executable jobscope-report into dir that prints its
// arguments, its standard input and JOBSCOPE_REPORT_CONFIG, and exits 7: a
// stand-in for the real binary, so this package's tests link no report.
func fakeReport(t *testing.T, dir string) string {
	t.Helper()
	p := filepath.Join(dir, reportBinary)
	script := "#!/bin/sh\necho \"argv0=$0 args=$*\"\nread -r line; echo \"stdin=$line\"\necho \"config=$JOBSCOPE_REPORT_CONFIG\" >&2\nexit 7\n"
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// `jobscope report ARGS` is jobscope-report ARGS: arguments, standard
// streams, environment and exit status pass through unchanged.
func TestReportRunsReportBinary(t *testing.T) {
	dir := t.TempDir()
	fakeReport(t, dir)
	cmd := exec.Command(os.Args[0], "report", "--format=json", "4242", "a b")
	cmd.Env = append(os.Environ(), "JOBSCOPE_TEST_MAIN=1", "PATH="+dir, "JOBSCOPE_REPORT_CONFIG=/site.yml")
	cmd.Stdin = strings.NewReader("from stdin")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 7 {
		t.Fatalf("exit: %v, want status 7; stderr %q", err, stderr.String())
	}
	want := "argv0=" + filepath.Join(dir, reportBinary) + " args=--format=json 4242 a b\nstdin=from stdin\n"
	if stdout.String() != want || stderr.String() != "config=/site.yml\n" {
		t.Errorf("stdout %q, stderr %q; want %q and the environment's config", stdout.String(), stderr.String(), want)
	}
}

// Without jobscope-report: one line that says which package to install,
// and the shell's status for a command not found.
func TestReportNotInstalled(t *testing.T) {
	cmd := exec.Command(os.Args[0], "report", "4242")
	cmd.Env = append(os.Environ(), "JOBSCOPE_TEST_MAIN=1", "PATH="+t.TempDir())
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != exitNotInstalled {
		t.Fatalf("exit: %v, want %d", err, exitNotInstalled)
	}
	line := stderr.String()
	if stdout.Len() != 0 || strings.Count(line, "\n") != 1 || !strings.HasPrefix(line, "jobscope report: jobscope-report is not installed") ||
		!strings.Contains(line, "install the jobscope or jobscope-static package") {
		t.Errorf("stdout %q, stderr %q", stdout.String(), line)
	}
}

// The report next to the daemon wins over PATH (the same build); PATH
// entries that name the working directory are never searched.
func TestFindReport(t *testing.T) {
	self, other, cwd := t.TempDir(), t.TempDir(), t.TempDir()
	fakeReport(t, other)
	fakeReport(t, cwd)
	t.Chdir(cwd)
	if got, err := findReport(filepath.Join(self, "jobscope"), other); err != nil || got != filepath.Join(other, reportBinary) {
		t.Errorf("from PATH: %q, %v", got, err)
	}
	next := fakeReport(t, self)
	if got, err := findReport(filepath.Join(self, "jobscope"), other); err != nil || got != next {
		t.Errorf("next to jobscope: %q, %v; want %q", got, err, next)
	}
	for _, search := range []string{"", ".", "::", "rel/dir"} {
		if got, err := findReport("", search); err == nil {
			t.Errorf("PATH %q: found %q in the working directory", search, got)
		}
	}
	// Not executable, or a directory: not the report.
	_ = os.Chmod(next, 0o644)
	if err := os.Mkdir(filepath.Join(other, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if got, _ := findReport(filepath.Join(self, "jobscope"), other); got != filepath.Join(other, reportBinary) {
		t.Errorf("a non-executable file next to jobscope was taken: %q", got)
	}
	// jobscope itself under the report's name (a copy's hard link, or
	// jobscope-report being jobscope) would exec itself for ever.
	if got, err := findReport(filepath.Join(other, reportBinary), other); err == nil {
		t.Errorf("jobscope named jobscope-report found itself: %q", got)
	}
	if err := os.Link(filepath.Join(other, reportBinary), filepath.Join(self, "jobscope")); err != nil {
		t.Fatal(err)
	}
	_ = os.Remove(next)
	if got, err := findReport(filepath.Join(self, "jobscope"), other); err == nil {
		t.Errorf("a hard link of jobscope in PATH was taken for the report: %q", got)
	}
}
