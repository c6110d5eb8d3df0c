// SPDX-License-Identifier: Apache-2.0

package report

import (
	"os"
	"path/filepath"
	"testing"
)

// The site configuration file, seeded with the test configuration: a file
// either loads into a configuration that passes Validate or is refused.
func FuzzLoadConfig(f *testing.F) {
	if b, err := os.ReadFile(filepath.Join("testdata", "report.yml")); err == nil {
		f.Add(b)
	}
	f.Add([]byte("prometheus:\n  url: http://localhost:9090\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		path := filepath.Join(t.TempDir(), "report.yml")
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		cfg, err := LoadConfig(path, true)
		if err == nil {
			if verr := cfg.Validate(); verr != nil {
				t.Fatalf("loaded a configuration Validate refuses: %v", verr)
			}
		}
	})
}
