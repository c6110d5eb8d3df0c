// SPDX-License-Identifier: Apache-2.0

package collector

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/jobscope/jobscope/internal/testutil"
)

// gatedExporter has one collector that counts its runs and holds each
// until release is closed; entered says a run began.
func gatedExporter() (exp *Exporter, runs *atomic.Int64, entered chan struct{}, release chan struct{}) {
	runs = &atomic.Int64{}
	entered, release = make(chan struct{}, 16), make(chan struct{})
	exp = NewExporter(map[string]Collector{"gated": funcCollector(func(s *Scrape, ch chan<- prometheus.Metric) error {
		n := runs.Add(1)
		entered <- struct{}{}
		<-release
		ch <- testDesc.Gauge(float64(n))
		return nil
	})}, Options{Problems: NewProblems(nil)})
	return exp, runs, entered, release
}

// joined is how many scrapes wait on the running collection.
func joined(e *Exporter) int {
	e.shared.mu.Lock()
	defer e.shared.mu.Unlock()
	if e.shared.current == nil {
		return 0
	}
	return e.shared.current.scrapes
}

// Scrapes that arrive while a collection runs wait for it and serve its
// result: N concurrent scrapes, one collection, one answer.
func TestConcurrentScrapesShareOneCollection(t *testing.T) {
	exp, runs, entered, release := gatedExporter()
	const n = 8
	outs := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			reg := prometheus.NewPedanticRegistry()
			reg.MustRegister(exp.Bind(context.Background()))
			outs[i] = string(testutil.Exposition(t, reg))
		}()
	}
	<-entered
	for deadline := time.Now().Add(30 * time.Second); joined(exp) < n; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d scrapes joined the collection", joined(exp), n)
		}
	}
	close(release)
	wg.Wait()
	if got := runs.Load(); got != 1 {
		t.Errorf("collector ran %d times for %d concurrent scrapes, want 1", got, n)
	}
	if got := exp.Collections(); got != 1 {
		t.Errorf("%d collections, want 1", got)
	}
	for i := 1; i < n; i++ {
		if outs[i] != outs[0] {
			t.Fatalf("scrape %d answered differently:\n%s\nvs\n%s", i, outs[i], outs[0])
		}
	}
	// The next scrape, after the collection ended, runs a new one.
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(exp.Bind(context.Background()))
	testutil.Exposition(t, reg)
	if runs.Load() != 2 || exp.Collections() != 2 {
		t.Errorf("a scrape after the shared one did not collect anew: %d runs, %d collections", runs.Load(), exp.Collections())
	}
}

// A waiting scrape whose deadline comes before the running collection's
// answers at its own deadline with every collector failed, and starts no
// collection; the scrape that started the collection still gets it whole.
func TestWaitingScrapeKeepsItsDeadline(t *testing.T) {
	exp, runs, entered, release := gatedExporter()
	first := make(chan string, 1)
	go func() {
		reg := prometheus.NewPedanticRegistry()
		reg.MustRegister(exp.Bind(context.Background()))
		first <- string(testutil.Exposition(t, reg))
	}()
	<-entered
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(exp.Bind(ctx))
	began := time.Now()
	out := string(testutil.Exposition(t, reg))
	if waited := time.Since(began); waited > 20*time.Second {
		t.Fatalf("the waiting scrape took %v, past its deadline", waited)
	}
	for _, want := range []string{`jobscope_scrape_collector_success{collector="gated"} 0`, `jobscope_collector_errors_total{cause="timeout",collector="gated"} 1`} {
		if !strings.Contains(out, want) {
			t.Errorf("waiting scrape: missing %s in\n%s", want, out)
		}
	}
	close(release)
	if got := <-first; !strings.Contains(got, `jobscope_scrape_collector_success{collector="gated"} 1`) || !strings.Contains(got, "jobscope_test_value 1\n") {
		t.Errorf("the first scrape lost its collection:\n%s", got)
	}
	if runs.Load() != 1 {
		t.Errorf("collector ran %d times, want 1", runs.Load())
	}
}

// When every scrape waiting on a collection has gone (clients closed, the
// server shutting down), the collection is cancelled: the commands it runs
// are killed rather than left to their deadline.
func TestAbandonedCollectionIsCancelled(t *testing.T) {
	cancelled := make(chan struct{})
	entered := make(chan struct{})
	exp := NewExporter(map[string]Collector{"slow": funcCollector(func(s *Scrape, ch chan<- prometheus.Metric) error {
		close(entered)
		<-s.Context().Done()
		close(cancelled)
		return s.Context().Err()
	})}, Options{Problems: NewProblems(nil)})
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	done := make(chan struct{})
	go func() {
		defer close(done)
		reg := prometheus.NewPedanticRegistry()
		reg.MustRegister(exp.Bind(ctx))
		_, _ = reg.Gather()
	}()
	<-entered
	cancel()
	select {
	case <-cancelled:
	case <-time.After(30 * time.Second):
		t.Fatal("the collection ran on after its only scrape left")
	}
	<-done
}
