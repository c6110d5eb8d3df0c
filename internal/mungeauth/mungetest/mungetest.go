// SPDX-License-Identifier: Apache-2.0

// Package mungetest starts a private munged for tests: its own key,
// socket, pid, log and seed files in a temporary directory, stopped at the
// test's end. The host's munged (and Slurm's) is never touched.
package mungetest

import (
	"crypto/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Start runs munged with a new random key and returns its socket. It skips
// the test, saying why, when not root (munged insists on owning its files
// and directories) or when munged is not installed.
func Start(t testing.TB) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("a private munged needs root (it checks the owner of its key and directories)")
	}
	bin, err := exec.LookPath("munged")
	if err != nil {
		if _, e := os.Stat("/usr/sbin/munged"); e != nil {
			t.Skip("munged is not installed (apt-get install munge)")
		}
		bin = "/usr/sbin/munged"
	}
	for _, p := range []string{"munge", "unmunge"} {
		if _, err := exec.LookPath(p); err != nil {
			t.Skipf("%s is not installed", p)
		}
	}
	// A short path: a unix socket's name is limited to 108 bytes.
	d, err := os.MkdirTemp("", "mt")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(d) })
	// Searchable by all: `munge -U uid` (root minting another user's
	// credential) reaches the socket as that user. The key stays 0600.
	if err := os.Chmod(d, 0o711); err != nil {
		t.Fatal(err)
	}
	key := make([]byte, 1024)
	_, _ = rand.Read(key)
	if err := os.WriteFile(filepath.Join(d, "key"), key, 0o600); err != nil {
		t.Fatal(err)
	}
	sock, pid := filepath.Join(d, "sock"), filepath.Join(d, "pid")
	out, err := exec.Command(bin, "--force", "--socket="+sock, "--key-file="+filepath.Join(d, "key"),
		"--pid-file="+pid, "--log-file="+filepath.Join(d, "log"), "--seed-file="+filepath.Join(d, "seed"),
		"--num-threads=2").CombinedOutput()
	if err != nil {
		t.Fatalf("munged: %v: %s", err, out)
	}
	b, err := os.ReadFile(pid)
	if err != nil {
		t.Fatalf("munged pid file: %v", err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || n <= 1 {
		t.Fatalf("munged pid file %q", b)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(n, syscall.SIGTERM)
		// munged removes its socket when it has stopped.
		for i := 0; i < 100; i++ {
			if _, err := os.Stat(sock); err != nil {
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
		// Not gone in 2 s: no test leaves a daemon behind.
		_ = syscall.Kill(n, syscall.SIGKILL)
	})
	return sock
}
