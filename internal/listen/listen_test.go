// SPDX-License-Identifier: Apache-2.0

package listen

import (
	"net"
	"os"
	"path/filepath"
	"testing"
)

func TestOpenTCP(t *testing.T) {
	ln, err := Open("127.0.0.1:0", 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if ln.Addr().Network() != "tcp" {
		t.Fatalf("network %q, want tcp", ln.Addr().Network())
	}
}

// A socket an earlier run left behind is replaced, and the new one gets
// the mode asked for, whatever the umask made of it.
func TestOpenUnixReplacesStaleSocketAndSetsMode(t *testing.T) {
	p := filepath.Join(t.TempDir(), "s.sock")
	stale, err := net.Listen("unix", p)
	if err != nil {
		t.Fatal(err)
	}
	// Keep the file: a crashed run does not unlink its socket.
	stale.(*net.UnixListener).SetUnlinkOnClose(false)
	stale.Close()
	ln, err := Open("unix:"+p, 0o660)
	if err != nil {
		t.Fatalf("stale socket not replaced: %v", err)
	}
	defer ln.Close()
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode().Perm(); got != 0o660 {
		t.Fatalf("mode %o, want 660", got)
	}
	c, err := net.Dial("unix", p)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	c.Close()
}

// A regular file at the socket's path is someone else's: it is not
// removed, and the listen fails.
func TestOpenUnixLeavesOtherFiles(t *testing.T) {
	p := filepath.Join(t.TempDir(), "not-a-socket")
	if err := os.WriteFile(p, []byte("keep"), 0o600); err != nil {
		t.Fatal(err)
	}
	if ln, err := Open("unix:"+p, 0o660); err == nil {
		ln.Close()
		t.Fatal("listened over a regular file")
	}
	if b, err := os.ReadFile(p); err != nil || string(b) != "keep" {
		t.Fatalf("file changed: %q, %v", b, err)
	}
}
