// SPDX-License-Identifier: Apache-2.0

package contrib

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jobscope/jobscope/internal/testutil"
)

// fullLevelNote is what a panel's description must say when it reads a
// family that only --metrics.level=full emits, so that an admin who sees
// "No data" on a default install knows why instead of suspecting jobscope.
const fullLevelNote = "--metrics.level=full"

// TestDashboardPanelsSayWhenTheyNeedFull: every panel reads only families
// the default (basic) level emits, or says in its description that it
// needs --metrics.level=full.
func TestDashboardPanelsSayWhenTheyNeedFull(t *testing.T) {
	basic := map[string]bool{}
	for _, g := range testutil.BasicGoldens(t, "../testdata") {
		for _, s := range testutil.GoldenSeries(t, g) {
			basic[s.Name] = true
		}
	}
	golden := goldenMetrics(t)
	files, _ := filepath.Glob("grafana/*.json")
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var dash struct{ Panels []panel }
		if err := json.Unmarshal(b, &dash); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		checked := 0
		for _, p := range flatten(dash.Panels) {
			var full []string
			for _, q := range p.Targets {
				ms, _ := exprNames(q.Expr)
				for _, m := range ms {
					if golden[m] && !basic[m] && !basic[strings.TrimSuffix(m, "_bucket")] {
						full = append(full, m)
					}
				}
			}
			checked++
			if len(full) > 0 && !strings.Contains(p.Description, fullLevelNote) {
				t.Errorf("%s: panel %q reads %v, which only %s emits, and its description does not say so",
					f, p.Title, full, fullLevelNote)
			}
		}
		if checked < 10 {
			t.Fatalf("%s: only %d panels read", f, checked)
		}
	}
}

type panel struct {
	Title       string
	Description string
	Targets     []struct{ Expr string }
	Panels      []panel
}

func flatten(ps []panel) []panel {
	var out []panel
	for _, p := range ps {
		out = append(out, p)
		out = append(out, flatten(p.Panels)...)
	}
	return out
}
