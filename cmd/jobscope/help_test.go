// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// runBinaryOut runs jobscope and returns its exit status, standard output
// and standard error.
func runBinaryOut(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "JOBSCOPE_TEST_MAIN=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exit.ExitCode(), stdout.String(), stderr.String()
	}
	if err != nil {
		t.Fatal(err)
	}
	return 0, stdout.String(), stderr.String()
}

// --help names the subcommands and shows every visible flag exactly once,
// in one of three sections (common, node, controller), sorted within it.
func TestHelpGroups(t *testing.T) {
	code, out, stderr := runBinaryOut(t, "--help")
	if code != 0 || stderr != "" {
		t.Fatalf("--help: exit %d, stderr %q", code, stderr)
	}
	for _, c := range subcommands() {
		if !strings.Contains(out, "jobscope "+c.name+" ") {
			t.Errorf("--help does not name the %s subcommand:\n%s", c.name, out)
		}
	}
	if !strings.Contains(out, "jobscope report") {
		t.Error("--help does not name jobscope report")
	}
	// Section of each flag line, in the order printed.
	titles := map[string]string{}
	for _, g := range flagGroups() {
		titles[g.title+":"] = g.name
	}
	section := ""
	bySection := map[string][]string{}
	where := map[string][]string{}
	for line := range strings.Lines(out) {
		line = strings.TrimRight(line, "\n")
		if g, ok := titles[line]; ok {
			section = g
			continue
		}
		f := strings.Fields(line)
		if len(f) == 0 || !strings.HasPrefix(f[0], "--") {
			continue
		}
		name := strings.TrimPrefix(f[0], "--")
		bySection[section] = append(bySection[section], name)
		where[name] = append(where[name], section)
	}
	for g, names := range bySection {
		if g == "" {
			t.Errorf("flags before any section: %v", names)
		}
		if !slices.IsSorted(names) {
			t.Errorf("section %s is not sorted: %v", g, names)
		}
	}
	if len(bySection) != 3 {
		t.Errorf("%d sections with flags, want 3", len(bySection))
	}
	fs, _, _ := newFlagSet()
	fs.VisitAll(func(f *pflag.Flag) {
		if groupOf(f) == "" {
			t.Errorf("--%s is in no group: register it in inGroup or through a collector", f.Name)
		}
		switch {
		case f.Hidden && len(where[f.Name]) != 0:
			t.Errorf("hidden --%s is shown", f.Name)
		case !f.Hidden && len(where[f.Name]) != 1:
			t.Errorf("--%s is shown in %d sections %v, want 1", f.Name, len(where[f.Name]), where[f.Name])
		}
	})
	// Spot checks of the grouping itself.
	for name, want := range map[string]string{"web.listen-address": groupCommon, "path.cgroupfs": groupCommon,
		"metrics.level": groupCommon, "collector.cgroup": groupNode, "bpf.pin-path": groupNode, "gpu.backend": groupNode,
		"collector.power.ipmi": groupNode, "slurm.job-props-dir": groupNode, "collector.slurm_jobs": groupController,
		"slurm.poll-interval": groupController} {
		if got := where[name]; len(got) != 1 || got[0] != want {
			t.Errorf("--%s in %v, want %s", name, got, want)
		}
	}
}

// A mistyped flag or subcommand gets one line with the nearest name, exit 2.
func TestUnknownFlagSuggests(t *testing.T) {
	for args, want := range map[string]string{
		"--web.listen-adress=:1":    "jobscope: unknown flag --web.listen-adress; did you mean --web.listen-address?", //nolint:misspell // the typo is the input
		"--colector.cgroup=false":   "jobscope: unknown flag --colector.cgroup; did you mean --collector.cgroup?",
		"--path.cgroupsfs=/x":       "jobscope: unknown flag --path.cgroupsfs; did you mean --path.cgroupfs?",
		"--something-else":          "jobscope: unknown flag --something-else (jobscope --help lists the flags)",
		"reprot":                    `jobscope: unexpected argument "reprot"; did you mean jobscope report?`,
		"--web.listen-address=:1 x": `jobscope: unexpected argument "x": the exporter takes flags only, subcommands are report, report-service, notify (jobscope --help)`,
	} {
		code, stdout, stderr := runBinaryOut(t, strings.Fields(args)...)
		if code != 2 || stdout != "" || stderr != want+"\n" {
			t.Errorf("%s: exit %d, stderr %q, want 2 and %q", args, code, stderr, want)
		}
	}
}

func TestEditDistance(t *testing.T) {
	for _, c := range []struct {
		a, b string
		d    int
	}{{"", "", 0}, {"", "abc", 3}, {"abc", "", 3}, {"kitten", "sitting", 3}, {"web.listen-adress", "web.listen-address", 1}, //nolint:misspell // the typo is the input
		{"flaw", "lawn", 2}, {"same", "same", 0}} {
		if got := editDistance(c.a, c.b); got != c.d {
			t.Errorf("editDistance(%q, %q) = %d, want %d", c.a, c.b, got, c.d)
		}
	}
	if got := nearest("mode", []string{"metrics.level", "web.config.file"}); got != "" {
		t.Errorf("nearest to a far name: %q", got)
	}
}
