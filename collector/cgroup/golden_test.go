// SPDX-License-Identifier: Apache-2.0

package cgroup

import (
	"path/filepath"
	"testing"

	promtest "github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/jobscope/jobscope/collector"
	"github.com/jobscope/jobscope/collector/collectortest"
	"github.com/jobscope/jobscope/internal/testutil"
)

// fixtureExporter builds an exporter with the cgroup collector over a
// fixture node (testdata/<node>/{cgroup,proc,props,sys}).
func fixtureExporter(t testing.TB, node string, level collector.Level) (*collector.Exporter, *collector.Problems) {
	t.Helper()
	root := filepath.Join("..", "..", "testdata", node)
	disc := collectortest.Discoverer(t, root)
	problems := collector.NewProblems(nil)
	c := New(Options{SysFS: filepath.Join(root, "sys"), Level: level})
	exp := collector.NewExporter(map[string]collector.Collector{"cgroup": c}, collector.Options{Discoverer: disc, Problems: problems, Info: collector.BuildInfo{Version: "test", Revision: "test", GoVersion: "go"}})
	return exp, problems
}

// TestNodeGolden: metrics.golden is the default (basic) level's output,
// metrics-full.golden the full level's.
func TestNodeGolden(t *testing.T) {
	for _, node := range []string{"node-v1", "node-v2", "node-v2-sluid"} {
		for level, file := range map[collector.Level]string{collector.LevelBasic: "metrics.golden", collector.LevelFull: "metrics-full.golden"} {
			t.Run(node+"/"+level.String(), func(t *testing.T) {
				exp, _ := fixtureExporter(t, node, level)
				g := collectortest.Gatherer(exp)
				testutil.Golden(t, filepath.Join("..", "..", "testdata", node, file), testutil.Exposition(t, g))
				problems, err := promtest.GatherAndLint(g)
				if err != nil {
					t.Fatal(err)
				}
				for _, p := range problems {
					t.Errorf("lint: %s: %s", p.Metric, p.Text)
				}
			})
		}
	}
}
