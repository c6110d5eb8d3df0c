// SPDX-License-Identifier: Apache-2.0

//go:build linux

package bpf

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestPinsOwnedByRoot reproduces issue 14's case: jobscope ran once as
// root, then starts as the service user with the unit's capabilities (the
// unit makes the pin directory its own, the pins stay root's). The load must
// say that the pins are root's, not that capabilities are missing.
func TestPinsOwnedByRoot(t *testing.T) {
	needRoot(t)
	const nobody = 65534
	pin := testPinPath(t)
	o := loadForTest(t, pin, "", V1None)
	o.Close()
	if err := os.Chown(pin, nobody, nobody); err != nil {
		t.Fatal(err)
	}

	// A copy of this test binary the user can execute (go test's build
	// directory is root's, mode 0700).
	dir, err := os.MkdirTemp("", "jobscope-pins-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "bpf.test")
	copyFile(t, os.Args[0], bin)

	cmd := exec.Command(bin, "-test.run=^$")
	cmd.Env = append(os.Environ(), "JOBSCOPE_BPF_HELPER=load")
	cmd.Stdin = strings.NewReader(pin + "\n")
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Credential: &syscall.Credential{Uid: nobody, Gid: nobody},
		// The node unit's set (contrib/systemd/jobscope.service).
		AmbientCaps: []uintptr{capBPF, capPerfmon, 12 /* CAP_NET_ADMIN */, 2 /* CAP_DAC_READ_SEARCH */, 19 /* CAP_SYS_PTRACE */},
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("load as uid %d: %v\n%s", nobody, err, out)
	}
	got := string(out)
	t.Logf("uid %d was told: %s", nobody, got)
	for _, want := range []string{"ebpf pin_owner", "belongs to root (uid 0)", "rm -r " + pin} {
		if !strings.Contains(got, want) {
			t.Errorf("output does not say %q", want)
		}
	}
	if strings.Contains(got, "no_privilege") {
		t.Error("blamed on missing privileges")
	}
}

// Pins of this user are not reported, whatever the error.
func TestPinOwnerProblemOwnPins(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "job_counters"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if le := pinOwnerProblem(dir, os.Geteuid(), os.ErrPermission); le != nil {
		t.Errorf("own pins reported: %v", le)
	}
	if le := pinOwnerProblem(dir, os.Geteuid()+1, os.ErrPermission); le == nil || le.Cause != "pin_owner" {
		t.Errorf("another user's pins: got %v", le)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}
