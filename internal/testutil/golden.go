// SPDX-License-Identifier: Apache-2.0

// Package testutil holds test helpers shared by jobscope's packages:
// golden /metrics files, promtool checks and fixture-tree copies.
package testutil

import (
	"bufio"
	"bytes"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

// Update rewrites golden files instead of comparing: go test ./... -update
var Update = flag.Bool("update", false, "rewrite golden files")

// Volatile metric families whose values change between runs; goldens
// keep their series with the value set to 0.
var Volatile = map[string]bool{
	"jobscope_scrape_collector_duration_seconds": true,
}

// Exposition gathers g and renders the text format, zeroing volatile values.
func Exposition(t testing.TB, g prometheus.Gatherer) []byte {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	var buf bytes.Buffer
	enc := expfmt.NewEncoder(&buf, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		if Volatile[mf.GetName()] {
			for _, m := range mf.Metric {
				zero(m)
			}
		}
		if err := enc.Encode(mf); err != nil {
			t.Fatalf("encode: %v", err)
		}
	}
	return buf.Bytes()
}

// zero replaces the value rather than writing into it: a const metric's
// Write hands out its own value objects, which concurrent gathers of one
// shared collection (Exporter.collectShared) read at the same time.
func zero(m *dto.Metric) {
	z := 0.0
	if m.Gauge != nil {
		m.Gauge = &dto.Gauge{Value: &z}
	}
	if m.Counter != nil {
		m.Counter = &dto.Counter{Value: &z}
	}
}

// Golden compares got with testdata file path (rewriting it with -update)
// and runs promtool's linter on it.
func Golden(t testing.TB, path string, got []byte) {
	t.Helper()
	GoldenText(t, path, got)
	Promtool(t, got)
}

// GoldenText compares got with the file at path (-update rewrites it),
// for outputs that are not expositions.
func GoldenText(t testing.TB, path string, got []byte) {
	t.Helper()
	if *Update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden (run with -update to create): %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("output differs from %s (run with -update and review the diff):\n%s", path, diff(string(want), string(got)))
	}
}

// Promtool runs `promtool check metrics` on an exposition and fails on any
// output. Without promtool the check is skipped with a log line (make test
// installs it).
func Promtool(t testing.TB, exposition []byte) {
	t.Helper()
	path, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("JOBSCOPE_REQUIRE_PROMTOOL") != "" {
			t.Fatal("promtool not found and JOBSCOPE_REQUIRE_PROMTOOL is set")
		}
		t.Log("promtool not installed: skipping `promtool check metrics` (apt-get install prometheus)")
		return
	}
	cmd := exec.Command(path, "check", "metrics")
	cmd.Stdin = bytes.NewReader(exposition)
	out, err := cmd.CombinedOutput()
	if err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Errorf("promtool check metrics: %v\n%s", err, out)
	}
}

// diff prints the lines only in want (-) and only in got (+).
func diff(want, got string) string {
	w := strings.Split(want, "\n")
	g := strings.Split(got, "\n")
	inW := map[string]int{}
	for _, l := range w {
		inW[l]++
	}
	inG := map[string]int{}
	for _, l := range g {
		inG[l]++
	}
	var b strings.Builder
	n := 0
	for _, l := range w {
		if inG[l] == 0 && n < 40 {
			b.WriteString("- " + l + "\n")
			n++
		}
	}
	for _, l := range g {
		if inW[l] == 0 && n < 80 {
			b.WriteString("+ " + l + "\n")
			n++
		}
	}
	return b.String()
}

// GoldenMetricNames returns every metric name in the exporter's golden
// outputs under root (testdata/**/*.golden): what jobscope really prints.
// Tests of what reads those metrics (rules, dashboards, the job report)
// check their names against it.
func GoldenMetricNames(t testing.TB, root string) map[string]bool {
	t.Helper()
	names := map[string]bool{}
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".golden") {
			return err
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			if rest, ok := strings.CutPrefix(line, "# TYPE "); ok {
				names[strings.Fields(rest)[0]] = true
			} else if line != "" && line[0] != '#' {
				names[strings.FieldsFunc(line, func(r rune) bool { return r == '{' || r == ' ' })[0]] = true
			}
		}
		return sc.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(names) < 20 {
		t.Fatalf("only %d metric names in %s/**/*.golden: goldens missing?", len(names), root)
	}
	return names
}
