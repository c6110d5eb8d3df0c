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

// TestMain lets a test run this test binary as the jobscope command
// (JOBSCOPE_TEST_MAIN=1): a real process, with main's exit status and
// standard error.
func TestMain(m *testing.M) {
	if os.Getenv("JOBSCOPE_TEST_MAIN") == "1" {
		main()
		return
	}
	os.Exit(m.Run())
}

// runBinary runs jobscope with args and returns its exit status and
// standard error.
func runBinary(t *testing.T, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "JOBSCOPE_TEST_MAIN=1", "JOBSCOPE_ELECTRICITYMAPS_TOKEN=")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exit.ExitCode(), stderr.String()
	}
	if err != nil {
		t.Fatal(err)
	}
	return 0, stderr.String()
}

// Every value that can be checked at start stops the start with exit
// status 2 and one line naming the flag, before any collector runs; a
// collector is never silently turned off by its own flag's value.
func TestWrongFlagValueExits2(t *testing.T) {
	dir := t.TempDir()
	unreadable := filepath.Join(dir, "web.yml")
	if err := os.WriteFile(unreadable, []byte("basic_auth_users: {a: b}\n"), 0o000); err != nil {
		t.Fatal(err)
	}
	badYAML := filepath.Join(dir, "bad.yml")
	_ = os.WriteFile(badYAML, []byte("tls_server_config: [\n"), 0o644)
	tree := []string{"--path.cgroupfs=" + dir, "--path.procfs=" + dir, "--path.sysfs=" + dir,
		"--collector.ebpf=false", "--web.listen-address=127.0.0.1:0"}
	cases := []struct {
		args []string
		flag string
	}{
		{[]string{"--collector.power.emissions.country=ZZ"}, "--collector.power.emissions.country"},
		{[]string{"--web.scrape-timeout=10"}, "--web.scrape-timeout"},
		{[]string{"--web.scrape-timeout=0s"}, "--web.scrape-timeout"},
		{[]string{"--collector.power.ipmi-interval=soon"}, "--collector.power.ipmi-interval"},
		{[]string{"--gpu.backend=amd"}, "--gpu.backend"},
		{[]string{"--collector.power.ipmi=serial"}, "--collector.power.ipmi"},
		{[]string{"--collector.power.idle-policy=nobody"}, "--collector.power.idle-policy"},
		{[]string{"--collector.power.emissions.provider=watttime"}, "--collector.power.emissions.provider"},
		{[]string{"--collector.power.emissions.factor=-3"}, "--collector.power.emissions.factor"},
		{[]string{"--web.config.file=" + badYAML}, "--web.config.file"},
		{[]string{"--web.config.file=" + filepath.Join(dir, "missing.yml")}, "--web.config.file"},
		{[]string{"--web.max-requests=0"}, "--web.max-requests"},
		{[]string{"--collector.process.io=maybe"}, "--collector.process.io"},
		{[]string{"--collector.cgroup.workers=-1"}, "--collector.cgroup.workers"},
		{[]string{"--bpf.v1-controller=cpu"}, "--bpf.v1-controller"},
		{[]string{"--mode=controller", "--slurm.format=xml"}, "--slurm.format"},
		{[]string{"--mode=controller", "--slurm.poll-interval=-1m"}, "--slurm.poll-interval"},
		{[]string{"--log.format=yaml"}, "--log.format"},
		{[]string{"--no-such-flag"}, "--no-such-flag"},
		// Checked at start, though not by the flag parser: the token the
		// provider needs comes from the environment.
		{[]string{"--collector.power.emissions.provider=electricitymaps", "--collector.power.emissions.country=FR", "--collector.power.ipmi=off", "--collector.gpu=false"}, "JOBSCOPE_ELECTRICITYMAPS_TOKEN"},
	}
	if os.Geteuid() != 0 { // root reads any file
		cases = append(cases, struct {
			args []string
			flag string
		}{[]string{"--web.config.file=" + unreadable}, "--web.config.file"})
	}
	for _, c := range cases {
		code, stderr := runBinary(t, append(append([]string{}, tree...), c.args...)...)
		lines := strings.Split(strings.TrimSpace(stderr), "\n")
		last := lines[len(lines)-1]
		if code != 2 || !strings.Contains(last, c.flag) {
			t.Errorf("%v: exit %d, last line %q; want 2 and a line naming %s", c.args, code, last, c.flag)
		}
		if c.flag != "JOBSCOPE_ELECTRICITYMAPS_TOKEN" && len(lines) != 1 {
			t.Errorf("%v: %d lines on stderr, want 1:\n%s", c.args, len(lines), stderr)
		}
	}
	// Every country of the embedded table passes, by either code.
	if code, stderr := runBinary(t, "--collector.power.emissions.country=MX", "--version"); code != 0 {
		t.Errorf("--collector.power.emissions.country=MX: exit %d: %s", code, stderr)
	}
}
