// SPDX-License-Identifier: Apache-2.0

package registry

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/jobscope/jobscope/collector"

	"github.com/jobscope/jobscope/internal/testutil"
)

// TestMetricsDoc keeps docs/metrics.md equal to what the code emits.
func TestMetricsDoc(t *testing.T) {
	path := filepath.Join("..", "..", "docs", "metrics.md")
	got := collector.MetricsDoc(Factories())
	if *testutil.Update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil || string(want) != got {
		t.Fatalf("docs/metrics.md is stale: run `make docs` and commit it")
	}
}
