// SPDX-License-Identifier: Apache-2.0

package collector

import (
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/jobscope/jobscope/discovery"
)

// One collection is written out by every scrape that waited for it, at
// once: Write must not write to the shared series (go test -race, make
// test-race, finds the race where it does). Each scrape gets the value.
func TestFastMetricWriteConcurrent(t *testing.T) {
	s := NewScrape(t.Context(), "test", ScrapeOptions{})
	js := s.Series(&discovery.Job{ID: "1", Meta: discovery.Meta{User: "u", Account: "a"}})
	d := NewJobDesc("slurm_job_test_total", "Test.", "type")
	ms := []prometheus.Metric{js.Counter(d, 3, "x"), js.Gauge(NewJobDesc("slurm_job_test", "Test."), 4)}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for _, m := range ms {
				var out dto.Metric
				if err := m.Write(&out); err != nil {
					t.Error(err)
					return
				}
				if v := out.GetCounter().GetValue() + out.GetGauge().GetValue(); v != 3 && v != 4 {
					t.Errorf("value %v", v)
				}
			}
		})
	}
	wg.Wait()
}
