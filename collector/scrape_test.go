// SPDX-License-Identifier: Apache-2.0

package collector

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/jobscope/jobscope/discovery"
	"github.com/jobscope/jobscope/gpu"
)

// countingGPUs counts its readings.
type countingGPUs struct{ reads atomic.Int32 }

func (g *countingGPUs) Name() string { return "fake" }
func (g *countingGPUs) Close() error { return nil }
func (g *countingGPUs) Read(*Scrape) (*GPUReading, error) {
	g.reads.Add(1)
	return &GPUReading{Snapshot: &gpu.Snapshot{}}, nil
}

// Collectors of one scrape share one GPU reading and one usage reading per
// job, whichever asks first and however they race; the next scrape reads
// again.
func TestPerScrapeValuesReadOnce(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "job_1")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	_ = os.WriteFile(filepath.Join(dir, "cpu.stat"), []byte("usage_usec 2000000\n"), 0o644)
	job := &discovery.Job{ID: "1", Version: 2, Dir: dir}
	var mu sync.Mutex
	seen := map[uint64][]any{} // by scrape serial: what each collector got
	reader := funcCollectorFor(func(s *Scrape) {
		r, err := s.GPU()
		if err != nil {
			t.Error(err)
		}
		u := s.Usage(s.Jobs()[0])
		mu.Lock()
		seen[s.Serial()] = append(seen[s.Serial()], r, u)
		mu.Unlock()
	})
	gpus := &countingGPUs{}
	exp := NewExporter(map[string]Collector{"a": reader, "b": reader, "c": reader},
		Options{Jobs: func(context.Context, discovery.Problem) []*discovery.Job { return []*discovery.Job{job} }, GPU: gpus})
	for range 2 {
		reg := prometheus.NewRegistry()
		reg.MustRegister(exp.Bind(context.Background()))
		if _, err := reg.Gather(); err != nil {
			t.Fatal(err)
		}
	}
	if n := gpus.reads.Load(); n != 2 {
		t.Errorf("%d GPU readings for 2 scrapes of 3 collectors, want 2", n)
	}
	for serial, got := range seen {
		for i := 2; i < len(got); i += 2 {
			if got[i] != got[0] || got[i+1] != got[1] {
				t.Errorf("scrape %d: collectors got different readings", serial)
			}
		}
		if u := got[1].(*Usage); u.CPU != 2 || u.Has&HasCPU == 0 {
			t.Errorf("usage %+v", u)
		}
	}
	if len(seen) != 2 {
		t.Errorf("%d scrapes seen", len(seen))
	}
}

type funcCollectorFor func(s *Scrape)

func (f funcCollectorFor) Collect(s *Scrape, _ chan<- prometheus.Metric) error { f(s); return nil }
