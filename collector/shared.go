// SPDX-License-Identifier: Apache-2.0

package collector

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// One collection at a time: scrapes that arrive while one runs wait for it
// and serve its result, so an HA Prometheus pair (or a retry) costs the node
// one collection, and both see one snapshot, which keeps their counters
// consistent. A waiter whose own deadline comes first answers with every
// collector failed (success 0), not with a collection of its own.

// flight is one collection shared by the scrapes that arrived while it ran.
type flight struct {
	done    chan struct{}
	metrics []prometheus.Metric
	// deadline bounds the collection (it answers by then, with whatever
	// collectors finished); zero when the scrape that started it had none.
	deadline time.Time
	scrapes  int // scrapes served by it (tests)
	// waiting counts the scrapes still waiting; when the last one leaves
	// before the answer (every client gone, or the server shutting down),
	// cancel stops the collection and the commands it runs.
	waiting int
	cancel  context.CancelFunc
}

// endsFor reports whether the flight is bound to answer by ctx's deadline:
// then a scrape at its deadline takes the flight's answer, which comes at
// once (the collection stops at the same moment), rather than none.
func (f *flight) endsFor(ctx context.Context) bool {
	dl, ok := ctx.Deadline()
	return !f.deadline.IsZero() && (!ok || !dl.Before(f.deadline))
}

type sharedCollections struct {
	mu      sync.Mutex
	current *flight
	count   uint64 // collections started, for tests
}

// collectShared serves a scrape from the running collection, or starts
// one. The collection runs under the starting scrape's deadline but not
// its cancellation: a client that goes away does not cut it short for the
// other scrapes waiting on it; it stops when none is left.
func (e *Exporter) collectShared(ctx context.Context, ch chan<- prometheus.Metric) {
	start := time.Now()
	e.shared.mu.Lock()
	f := e.shared.current
	if f == nil {
		f = &flight{done: make(chan struct{})}
		e.shared.current = f
		e.shared.count++
		cctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		if dl, ok := ctx.Deadline(); ok {
			f.deadline = dl
			var cancelDL context.CancelFunc
			cctx, cancelDL = context.WithDeadline(cctx, dl)
			stop := cancel
			cancel = func() { cancelDL(); stop() }
		}
		f.cancel = cancel
		go func() {
			defer cancel()
			f.metrics = e.gather(cctx)
			e.shared.mu.Lock()
			if e.shared.current == f {
				e.shared.current = nil
			}
			e.shared.mu.Unlock()
			close(f.done)
		}()
	}
	f.scrapes++
	f.waiting++
	e.shared.mu.Unlock()
	defer e.leave(f)
	select {
	case <-f.done:
	case <-ctx.Done():
		if !errors.Is(ctx.Err(), context.DeadlineExceeded) || !f.endsFor(ctx) {
			e.timedOut(ctx, ch, time.Since(start))
			return
		}
		<-f.done
	}
	for _, m := range f.metrics {
		ch <- m
	}
}

// leave marks a scrape done with f, cancelling the collection when no
// scrape waits for it any more.
func (e *Exporter) leave(f *flight) {
	e.shared.mu.Lock()
	defer e.shared.mu.Unlock()
	f.waiting--
	if f.waiting == 0 {
		f.cancel()
		// A scrape arriving now starts afresh, not on the cancelled one.
		if e.shared.current == f {
			e.shared.current = nil
		}
	}
}

// gather runs one collection into a slice, its label values cut to
// LabelValueMax before any scrape sees it.
func (e *Exporter) gather(ctx context.Context) []prometheus.Metric {
	ms := collectAll(func(ch chan<- prometheus.Metric) { e.collect(ctx, ch) })
	e.caps.apply(ms)
	return append(ms, e.caps.metrics()...)
}

// collectAll returns what fn sends, received while fn runs.
func collectAll(fn func(ch chan<- prometheus.Metric)) []prometheus.Metric {
	ch := make(chan prometheus.Metric, 256)
	var out []prometheus.Metric
	done := make(chan struct{})
	go func() {
		for m := range ch {
			out = append(out, m)
		}
		close(done)
	}()
	fn(ch)
	close(ch)
	<-done
	return out
}

// timedOut answers a scrape whose deadline passed while it waited for the
// running collection: every collector failed for it, counted as a timeout.
func (e *Exporter) timedOut(ctx context.Context, ch chan<- prometheus.Metric, waited time.Duration) {
	for _, name := range e.names {
		e.problems.Report(name, "timeout", fmt.Errorf("waiting for the running collection: %w", ctx.Err()))
		ch <- e.durationDesc.Gauge(waited.Seconds(), name)
		ch <- e.successDesc.Gauge(0, name)
	}
	ch <- e.buildDesc.Gauge(1, e.opts.Info.Version, e.opts.Info.Revision, e.opts.Info.GoVersion)
	e.problems.collect(ch)
}

// Collections returns how many collections the exporter has run.
func (e *Exporter) Collections() uint64 {
	e.shared.mu.Lock()
	defer e.shared.mu.Unlock()
	return e.shared.count
}
