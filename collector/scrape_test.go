// SPDX-License-Identifier: Apache-2.0

package collector

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/jobscope/jobscope/discovery"
)

// Collectors of one scrape share what a provider reads through Once, for
// each key, whichever asks first and however they race; the next scrape
// reads again.
func TestPerScrapeValuesReadOnce(t *testing.T) {
	type key struct{ n int }
	var reads [2]atomic.Int32
	var mu sync.Mutex
	seen := map[uint64][]any{} // by scrape serial: what each collector got
	reader := funcCollectorFor(func(s *Scrape) {
		for k := range reads {
			v := s.Once(key{k}, func() any { reads[k].Add(1); return new(int) })
			mu.Lock()
			seen[s.Serial()] = append(seen[s.Serial()], v)
			mu.Unlock()
		}
	})
	exp := NewExporter(map[string]Collector{"a": reader, "b": reader, "c": reader},
		Options{Jobs: func(context.Context, discovery.Problem) []*discovery.Job { return nil }})
	for range 2 {
		reg := prometheus.NewRegistry()
		reg.MustRegister(exp.Bind(context.Background()))
		if _, err := reg.Gather(); err != nil {
			t.Fatal(err)
		}
	}
	for k := range reads {
		if n := reads[k].Load(); n != 2 {
			t.Errorf("key %d: %d readings for 2 scrapes of 3 collectors, want 2", k, n)
		}
	}
	for serial, got := range seen {
		if len(got) != 6 {
			t.Fatalf("scrape %d: %d values, want 6", serial, len(got))
		}
		for i := 2; i < len(got); i += 2 {
			if got[i] != got[0] || got[i+1] != got[1] {
				t.Errorf("scrape %d: collectors got different values", serial)
			}
		}
		if got[0] == got[1] {
			t.Errorf("scrape %d: two keys share one value", serial)
		}
	}
	if len(seen) != 2 {
		t.Errorf("%d scrapes seen", len(seen))
	}
}

type funcCollectorFor func(s *Scrape)

func (f funcCollectorFor) Collect(s *Scrape, _ chan<- prometheus.Metric) error { f(s); return nil }
