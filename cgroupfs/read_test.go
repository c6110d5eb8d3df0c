// SPDX-License-Identifier: Apache-2.0

package cgroupfs

import (
	"os"
	"path/filepath"
	"testing"
)

// A symlink planted in a cgroup tree is never followed: a symlinked
// interface file and a symlinked cgroup directory are errors of that file
// (read_failed), and nothing of their targets is read.
func TestSymlinksNotFollowed(t *testing.T) {
	job, secret := t.TempDir(), t.TempDir()
	target := filepath.Join(secret, "shadow")
	if err := os.WriteFile(target, []byte("8:0 rbytes=1 wbytes=2 rios=3 wios=4 dbytes=5 dios=6\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, filepath.Join(job, "io.stat")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, filepath.Join(job, "step_0")); err != nil {
		t.Fatal(err)
	}
	f := NewFiles(NewReader(), nil)
	defer f.Close()
	if b := f.Read(job, "io.stat"); b != nil {
		t.Errorf("read %q through a symlinked io.stat", b)
	}
	if b := f.Read(filepath.Join(job, "step_0"), "shadow"); b != nil {
		t.Errorf("read %q through a symlinked cgroup directory", b)
	}
	if len(f.Problems) != 2 || f.Problems[0].Cause != "read_failed" || f.Problems[1].Cause != "read_failed" || f.Gone {
		t.Errorf("problems %+v (gone %v), want two read_failed", f.Problems, f.Gone)
	}
	if b, err := NewReader().Read(filepath.Join(job, "io.stat")); err == nil {
		t.Errorf("Reader.Read followed the symlink: %q", b)
	}
}
