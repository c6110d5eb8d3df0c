// SPDX-License-Identifier: Apache-2.0

package cgroupfs

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// realFiles adds every interface file of the fixture trees (copies of
// real kernels' cgroupfs) as seeds.
func realFiles(f *testing.F, add func(b []byte)) {
	f.Helper()
	for _, tree := range []string{"node-v1", "node-v2", "node-v2-sluid"} {
		_ = filepath.WalkDir(filepath.Join("..", "testdata", tree, "cgroup"), func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.Type().IsRegular() {
				if b, err := os.ReadFile(p); err == nil && len(b) < 16<<10 {
					add(b)
				}
			}
			return nil
		})
	}
}

// The reader returns a file's exact content, or ErrTooLarge past its limit.
func FuzzReadIn(f *testing.F) {
	f.Add([]byte("anon 1879048192\nfile 241172480\n"), uint16(0))
	f.Add([]byte{}, uint16(4))
	f.Fuzz(func(t *testing.T, b []byte, repeat uint16) {
		dir := t.TempDir()
		content := bytes.Repeat(b, int(repeat%64)+1)
		if err := os.WriteFile(filepath.Join(dir, "memory.stat"), content, 0o644); err != nil {
			t.Fatal(err)
		}
		r := NewReader()
		d, err := r.OpenDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		got, err := r.ReadIn(d, "memory.stat")
		switch {
		case errors.Is(err, ErrTooLarge):
			if len(content) < maxFile {
				t.Fatalf("%d bytes: too large", len(content))
			}
		case err == nil && len(content) >= maxFile:
			t.Fatalf("%d bytes read, past the %d limit", len(content), maxFile)
		case err != nil:
			t.Fatal(err)
		case !bytes.Equal(got, content):
			t.Fatalf("read %d bytes, file has %d", len(got), len(content))
		}
	})
}
