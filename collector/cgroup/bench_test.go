// SPDX-License-Identifier: Apache-2.0

package cgroup

import (
	"context"
	"fmt"
	"io"
	"os"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"

	"github.com/jobscope/jobscope/collector"
	"github.com/jobscope/jobscope/discovery"
	"github.com/jobscope/jobscope/internal/testutil"
	fixturegen "github.com/jobscope/jobscope/test/gen/fixture"
)

// BenchmarkScrape measures one whole node scrape (discovery, the cgroup
// collector, gathering and text encoding) on generated trees.
func BenchmarkScrape(b *testing.B) {
	for _, n := range []int{128, 512} {
		root := benchTree(b, n)
		b.Run(fmt.Sprintf("jobs=%d", n), func(b *testing.B) {
			disc := discovery.New(discovery.Config{Layout: discovery.Layout{V2: root}, ProcFS: b.TempDir(),
				LookupUser: func(int) (string, error) { return "u", nil }})
			exp := collector.NewExporter(map[string]collector.Collector{"cgroup": New(Options{SysFS: b.TempDir()})}, collector.Options{Discoverer: disc, Problems: collector.NewProblems(nil)})
			b.ResetTimer()
			cpu0 := testutil.CPUTime()
			for b.Loop() {
				reg := prometheus.NewRegistry()
				reg.MustRegister(exp.Bind(context.Background()))
				mfs, err := reg.Gather()
				if err != nil {
					b.Fatal(err)
				}
				enc := expfmt.NewEncoder(io.Discard, expfmt.NewFormat(expfmt.TypeTextPlain))
				for _, mf := range mfs {
					_ = enc.Encode(mf)
				}
			}
			b.ReportMetric(float64(testutil.CPUTime()-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
}

var benchTrees = map[int]string{}

// benchTree generates a tree once per size for all runs of the benchmark
// (-count repeats it); it lives until the test binary exits.
func benchTree(b *testing.B, n int) string {
	if root, ok := benchTrees[n]; ok {
		return root
	}
	root, err := os.MkdirTemp(fixturegen.BenchDir(), "jobscope-bench-")
	if err != nil {
		b.Fatal(err)
	}
	if err := fixturegen.V2Node(root, n); err != nil {
		b.Fatal(err)
	}
	benchTrees[n] = root
	return root
}

func TestMain(m *testing.M) {
	code := m.Run()
	for _, root := range benchTrees {
		_ = os.RemoveAll(root)
	}
	os.Exit(code)
}
