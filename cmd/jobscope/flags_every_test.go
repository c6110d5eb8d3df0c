// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

// wrongValue says what a wrong value is for each flag whose type alone does
// not say (strings, lists, maps). A flag added without an entry here fails
// TestEveryFlagRefusesAWrongValue until one is written.
func wrongValues(dir string) map[string]string {
	missing := filepath.Join(dir, "missing")
	file := filepath.Join(dir, "a-file")
	return map[string]string{
		// Paths jobscope reads from must exist.
		"path.cgroupfs":                      missing,
		"path.procfs":                        missing,
		"path.sysfs":                         missing,
		"web.config.file":                    missing,
		"gpu.fake-file":                      missing,
		"collector.power.ipmi-device":        missing,
		"slurm.bin-dir":                      missing,
		"collector.process.fs":               missing,
		"slurm.command-path":                 "squeue=" + missing,
		"slurm.node-metadata.squeue-command": missing,
		"collector.power.ipmi-command":       missing + " --get-system-power-statistics",
		// Directories the Slurm prolog creates with the first job may be
		// missing at start; something else in their place is wrong.
		"slurm.job-props-dir": file,
		"gpu.job-mapping-dir": file,
		// jobscope creates the pin directory: only its form can be wrong.
		"bpf.pin-path": "relative/pins",
		// Addresses and URLs that cannot be parsed.
		"web.listen-address":            "localhost",
		"gpu.dcgm-address":              "unix://relative.sock",
		"collector.power.emissions.url": "http://%zz",
		"slurm.restd.url":               "unix://relative.sock",
		"slurm.restd.token-file":        missing,
		"web.telemetry-path":            "metrics",
		// Words from a fixed list.
		"mode":                               "login",
		"metrics.level":                      "verbose",
		"log.level":                          "loud",
		"log.format":                         "yaml",
		"slurm.node-metadata.format":         "xml",
		"slurm.format":                       "xml",
		"slurm.source":                       "rest",
		"bpf.v1-controller":                  "cpu",
		"gpu.backend":                        "amd",
		"collector.process.io":               "maybe",
		"collector.power.ipmi":               "serial",
		"collector.power.idle-policy":        "nobody",
		"collector.power.emissions.provider": "watttime",
		"collector.power.emissions.country":  "ZZ",
		// Names with characters the name's syntax has no place for.
		"slurm.node-name":                "node 1",
		"collector.power.emissions.zone": "FR&token=x",
		"collector.slurm_sacct.since":    "the day before",
	}
}

// anyString lists the string flags for which every value is right, each
// with the reason. It is empty today: keep it that way where a check can be
// written.
var anyString = map[string]string{}

// wrongByType is a wrong value for every flag of a type that has one.
var wrongByType = map[string]string{
	"bool":     "maybe",
	"duration": "-1s", // no duration flag takes a negative one
	"int":      "-1",  // nor a negative count
	"uint32":   "-1",
	"float":    "-1",
}

// Every flag of the exporter, given a wrong value, stops the start the same
// way: exit status 2, one line on standard error naming the flag, no
// panic. The flags come from the flag set the binary parses, so a new flag
// is covered (or the test asks for its wrong value).
func TestEveryFlagRefusesAWrongValue(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a-file"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	// A tree jobscope starts on: a wrong value that went through unchecked
	// would start the exporter, not stop it.
	tree := filepath.Join(dir, "cgroup")
	if err := os.MkdirAll(tree, 0o755); err != nil {
		t.Fatal(err)
	}
	_ = os.WriteFile(filepath.Join(tree, "cgroup.controllers"), []byte("cpu memory\n"), 0o644)
	base := []string{"--path.cgroupfs=" + tree, "--path.procfs=" + dir, "--path.sysfs=" + dir, "--slurm.job-props-dir=" + dir,
		"--collector.ebpf=false", "--gpu.backend=none", "--collector.power.ipmi=off", "--slurm.node-metadata.squeue=false",
		"--web.listen-address=127.0.0.1:0"}
	wrong := wrongValues(dir)
	fs, _, _ := newFlagSet()
	seen := 0
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Deprecated != "" {
			return // an old name writes through to its new flag (TestDeprecatedFlagNames)
		}
		typ := f.Value.Type()
		value, ok := wrong[f.Name]
		if !ok {
			value, ok = wrongByType[typ]
		}
		if _, valid := anyString[f.Name]; valid {
			return
		}
		if !ok {
			t.Errorf("--%s (%s): no wrong value in wrongValues: add one, or list the flag in anyString with the reason", f.Name, typ)
			return
		}
		seen++
		t.Run(f.Name, func(t *testing.T) {
			code, stderr := runBounded(t, append(append([]string{}, base...), "--"+f.Name+"="+value)...)
			lines := strings.Split(strings.TrimRight(stderr, "\n"), "\n")
			if code != 2 || len(lines) != 1 || !strings.Contains(lines[0], `"--`+f.Name+`"`) {
				t.Errorf("--%s=%s: exit %d, stderr:\n%s\nwant exit 2 and one line naming the flag", f.Name, value, code, stderr)
			}
			if strings.Contains(stderr, "panic") || strings.Contains(stderr, "goroutine") {
				t.Errorf("--%s=%s: a panic:\n%s", f.Name, value, stderr)
			}
		})
	})
	if seen < 60 {
		t.Errorf("only %d flags tried", seen)
	}
	for name := range wrong {
		if fs.Lookup(name) == nil {
			t.Errorf("wrongValues names --%s, which no longer exists", name)
		}
	}
}

// runBounded runs jobscope like runBinary, but kills it after a while: a
// wrong value that is not refused starts the exporter, which would serve
// until killed.
func runBounded(t *testing.T, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], args...)
	cmd.Env = append(os.Environ(), "JOBSCOPE_TEST_MAIN=1", "JOBSCOPE_ELECTRICITYMAPS_TOKEN=")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		return -1, stderr.String() + "\n(still running after 20s: the value was not refused)"
	}
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exit.ExitCode(), stderr.String()
	}
	if err != nil {
		t.Fatal(err)
	}
	return 0, stderr.String()
}
