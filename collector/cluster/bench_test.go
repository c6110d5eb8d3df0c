// SPDX-License-Identifier: Apache-2.0

package cluster

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"

	"github.com/jobscope/jobscope/internal/testutil"
	"github.com/jobscope/jobscope/slurmcli"
	"github.com/jobscope/jobscope/slurmcli/slurmclitest"
	clustergen "github.com/jobscope/jobscope/test/gen/cluster"
)

// BenchmarkSlurmCluster measures one controller-mode poll of a simulated
// 2,000-node cluster of 10,000 and of 50,000 jobs (test/gen/cluster): the fake commands
// run, every output is parsed, every default cluster collector emits, and
// the exposition is encoded. Each iteration is a new poll (the fake clock
// moves a poll interval on). test/bench/ctl measures the real binary
// (time per job, series, resident memory); this gives the allocations.
func BenchmarkSlurmCluster(b *testing.B) {
	// The simulated times are UTC, as the binary's benchmark runs them.
	if os.Getenv("TZ") != "UTC" {
		b.Skip("run with TZ=UTC: the simulated squeue text prints UTC times")
	}
	// Two queue sizes on the same nodes: the difference is the cost of
	// 40,000 jobs, whatever the nodes and the fixed costs.
	for _, jobs := range []int{10000, 50000} {
		dir := b.TempDir()
		shape := clustergen.Default
		shape.Jobs = jobs
		if err := clustergen.Write(dir, filepath.Join("..", "..", "testdata", "slurm", "22.05"), shape); err != nil {
			b.Fatal(err)
		}
		for _, format := range []slurmcli.Format{slurmcli.FormatAuto, slurmcli.FormatText} {
			b.Run(fmt.Sprintf("%s/jobs=%d", format, jobs), func(b *testing.B) {
				clk := testutil.NewClock(time.Unix(1795565000, 0))
				sh := sharedWithClock(&slurmclitest.Bin{Dir: filepath.Join(dir, "bin")}, format, clk)
				exp := slurmExporter(b, sh)
				series := 0
				b.ReportAllocs()
				cpu0 := testutil.CPUTime()
				for b.Loop() {
					clk.Add(time.Minute)
					mfs, err := slurmGather(context.Background(), exp).Gather()
					if err != nil {
						b.Fatal(err)
					}
					enc := expfmt.NewEncoder(io.Discard, expfmt.NewFormat(expfmt.TypeTextPlain))
					series = 0
					for _, mf := range mfs {
						series += len(mf.Metric)
						_ = enc.Encode(mf)
					}
				}
				b.ReportMetric(float64(series), "series")
				b.ReportMetric(float64(testutil.CPUTime()-cpu0)/float64(b.N), "cpu-ns/op")
			})
		}
	}
}
