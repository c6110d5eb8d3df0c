package power

import (
	"context"
	"sync"
	"time"
)

// Poller caches a slow source (a BMC, a web API): it starts a fetch at most
// once per interval, in the background so a slow source never holds a
// scrape past its deadline, and hands out the last good value.
type Poller[T any] struct {
	fetch    func(ctx context.Context) (T, error)
	interval time.Duration
	timeout  time.Duration
	now      func() time.Time

	mu         sync.Mutex
	value      T
	valueAt    time.Time
	has        bool
	lastStart  time.Time
	started    bool
	running    chan struct{} // closed when the fetch in flight ends
	pendingErr error         // failure not yet handed to a caller
	runs       int
}

// NewPoller builds a poller; fetch gets a context bounded by timeout.
func NewPoller[T any](fetch func(ctx context.Context) (T, error), interval, timeout time.Duration, now func() time.Time) *Poller[T] {
	if now == nil {
		now = time.Now
	}
	return &Poller[T]{fetch: fetch, interval: interval, timeout: timeout, now: now}
}

// Get returns the last good value and when it was fetched (ok false when
// there is none yet). If the last attempt started an interval ago or more
// and none is running, it starts one; it waits for the fetch in flight until
// ctx ends. err is a failed fetch not yet reported to any caller, so each
// failure is reported once.
func (p *Poller[T]) Get(ctx context.Context) (v T, at time.Time, ok bool, err error) {
	p.mu.Lock()
	if p.running == nil && (!p.started || p.now().Sub(p.lastStart) >= p.interval) {
		p.started, p.lastStart = true, p.now()
		p.runs++
		done := make(chan struct{})
		p.running = done
		go p.run(done)
	}
	wait := p.running
	p.mu.Unlock()
	if wait != nil {
		select {
		case <-wait:
		case <-ctx.Done():
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	err, p.pendingErr = p.pendingErr, nil
	return p.value, p.valueAt, p.has, err
}

func (p *Poller[T]) run(done chan struct{}) {
	ctx, cancel := context.WithTimeout(context.Background(), p.timeout)
	v, err := p.fetch(ctx)
	cancel()
	p.mu.Lock()
	if err != nil {
		p.pendingErr = err
	} else {
		p.value, p.valueAt, p.has = v, p.now(), true
	}
	p.running = nil
	p.mu.Unlock()
	close(done)
}

// Runs says how many fetches were started (for tests and self-metrics).
func (p *Poller[T]) Runs() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.runs
}
