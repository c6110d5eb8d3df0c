// SPDX-License-Identifier: Apache-2.0

package testutil

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Series is one sample line of a golden exposition.
type Series struct {
	Name   string
	Labels map[string]string
	Value  float64 // of a gauge or counter
}

// GoldenSeries parses a golden exposition into its series.
func GoldenSeries(t testing.TB, path string) []Series {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var out []Series
	for name, mf := range fams {
		for _, m := range mf.GetMetric() {
			s := Series{Name: name, Labels: map[string]string{}, Value: m.GetGauge().GetValue() + m.GetCounter().GetValue()}
			for _, lp := range m.GetLabel() {
				s.Labels[lp.GetName()] = lp.GetValue()
			}
			out = append(out, s)
		}
	}
	return out
}

// BasicGoldens lists the golden expositions under root taken at the
// default --metrics.level (basic): every *.golden but *-full.golden.
func BasicGoldens(t testing.TB, root string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".golden") || strings.HasSuffix(path, "-full.golden") {
			return err
		}
		out = append(out, path)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
