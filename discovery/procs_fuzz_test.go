// SPDX-License-Identifier: Apache-2.0

package discovery

import (
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// cgroup.procs as discovery reads it, seeded with the fixture trees' files:
// every pid returned is positive and is a line of the file.
func FuzzReadProcs(f *testing.F) {
	for _, tree := range []string{"node-v1", "node-v2", "node-v2-sluid"} {
		_ = filepath.WalkDir(filepath.Join("..", "testdata", tree, "cgroup"), func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.Name() == "cgroup.procs" {
				if b, err := os.ReadFile(p); err == nil {
					f.Add(b)
				}
			}
			return nil
		})
	}
	f.Add([]byte("1\n2\n-3\n\n 4 \n99999999999999999999\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), b, 0o644); err != nil {
			t.Fatal(err)
		}
		pids, err := readProcsTree(dir, 0)
		if err != nil {
			t.Fatal(err)
		}
		// The kernel writes no leading zeros; "01" read as 1 is harmless
		// (a crasher of this target's first property, kept as a seed).
		lines := map[int]bool{}
		for _, l := range strings.Split(string(b), "\n") {
			if v, err := strconv.Atoi(strings.TrimSpace(l)); err == nil {
				lines[v] = true
			}
		}
		for _, p := range pids {
			if p <= 0 || !lines[p] && len(b) < 64<<10 {
				t.Fatalf("pid %d from %q", p, b)
			}
		}
	})
}
