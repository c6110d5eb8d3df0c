// SPDX-License-Identifier: Apache-2.0

package testutil

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// CopyTree copies the fixture tree src onto dst, overwriting files already
// there, so a test can move a tree from one scrape's state to the next.
func CopyTree(t testing.TB, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}
