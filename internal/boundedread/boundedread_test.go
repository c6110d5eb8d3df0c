// SPDX-License-Identifier: Apache-2.0

package boundedread

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

func open(t *testing.T, content []byte) int {
	t.Helper()
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, content, 0o600); err != nil {
		t.Fatal(err)
	}
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	return fd
}

// Files below, at and above the bound, across the 4 KiB the buffer starts
// with: the whole file up to the bound, then the bound's worth, truncated.
func TestFd(t *testing.T) {
	for _, c := range []struct{ size, limit int }{
		{0, 10}, {9, 10}, {10, 10}, {11, 10}, {5000, 10}, {5000, 5000}, {5001, 5000}, {100000, 9000}, {100000, 1 << 20},
	} {
		content := bytes.Repeat([]byte("0123456789"), c.size/10+1)[:c.size]
		b, truncated, err := Fd(open(t, content), c.limit)
		want := content[:min(c.size, c.limit)]
		if err != nil || !bytes.Equal(b, want) || truncated != (c.size > c.limit) {
			t.Errorf("size %d, limit %d: %d bytes, truncated %v, %v; want %d bytes, truncated %v",
				c.size, c.limit, len(b), truncated, err, len(want), c.size > c.limit)
		}
		if cap(b) > c.limit+1 {
			t.Errorf("size %d, limit %d: a buffer of %d bytes", c.size, c.limit, cap(b))
		}
	}
}

// A read error (a directory) is returned, not an empty file.
func TestFdError(t *testing.T) {
	fd, err := unix.Open(t.TempDir(), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	if _, _, err := Fd(fd, 10); err == nil {
		t.Error("reading a directory: no error")
	}
}
