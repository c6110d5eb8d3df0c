// SPDX-License-Identifier: Apache-2.0

// Package poll keeps the last value of a slow source (a Slurm command, a
// BMC, a web API, RAPL counters) for the scrapes that ask for it: one fetch
// at a time however many scrapes ask (single-flight), at most one started
// per interval, the last good value served with its age while fetches fail,
// and a scrape waiting only for its share of its own deadline.
package poll

import (
	"context"
	"sync"
	"time"
)

// Share is how long a caller waits for a fetch in flight: Fraction of the
// time left before its deadline, leaving it at most MaxReserve (when set)
// to turn what it gets into metrics.
type Share struct {
	Fraction   float64
	MaxReserve time.Duration
}

// Within returns a context that ends when ctx does or when share of the
// time left before ctx's deadline has passed, whichever comes first.
func Within(ctx context.Context, share Share) (context.Context, context.CancelFunc) {
	dl, ok := ctx.Deadline()
	if !ok {
		return context.WithCancel(ctx)
	}
	left := time.Until(dl)
	reserve := time.Duration(float64(left) * (1 - share.Fraction))
	if share.MaxReserve > 0 {
		reserve = min(reserve, share.MaxReserve)
	}
	return context.WithDeadline(ctx, dl.Add(-reserve))
}

// Config configures a Poller.
type Config struct {
	// Interval: at most one fetch starts per interval (0: a Get starts one
	// whenever none is running).
	Interval time.Duration
	// Retry, when set, replaces Interval after a failed fetch: a source
	// polled seldom because its data changes seldom (Slurm's fairshare)
	// should not serve a value that ages for a whole Interval more after
	// one failure, nor lose it to a maximum age before the next try.
	Retry time.Duration
	// Timeout bounds one fetch (0: only Close ends it).
	Timeout time.Duration
	// Wait is the share of a Get's deadline it waits for a fetch in flight.
	Wait Share
	// WaitFailing caps that wait while the last fetch failed and a value
	// is kept (default 250 ms).
	WaitFailing time.Duration
	// Every also fetches in the background this often, whether or not
	// anyone asks (0: only on Get).
	Every time.Duration
	// Now is the clock (tests set it).
	Now func() time.Time
}

// Result is what a Get hands out.
type Result[T any] struct {
	// Value is the last good value, fetched at Good (zero: never).
	Value T
	Good  time.Time
	// Err is the latest finished fetch's error; nil when it gave Value.
	Err error
	// Unreported is a failed fetch no earlier Get handed out: a caller
	// counting failures counts each once.
	Unreported error
	// Running is when the fetch still in flight as Get returned began
	// (zero: none was): Value is then older than the refresh it waited for.
	Running time.Time
	// At is when Get returned; ages are measured to it.
	At time.Time
}

// Has reports whether there is a value at all.
func (r Result[T]) Has() bool { return !r.Good.IsZero() }

// Age is how old Value is.
func (r Result[T]) Age() time.Duration { return max(r.At.Sub(r.Good), 0) }

// Fresh reports whether Value comes from the latest refresh: it succeeded
// and no newer one is overdue.
func (r Result[T]) Fresh() bool { return r.Has() && r.Err == nil && r.Running.IsZero() }

// Poller fetches a T.
type Poller[T any] struct {
	fetch func(context.Context) (T, error)
	cfg   Config

	ctx    context.Context // ends at Close: cancels a fetch in flight
	cancel context.CancelFunc

	mu         sync.Mutex
	res        Result[T]
	started    time.Time     // last fetch start (zero: none yet)
	running    chan struct{} // closed when the fetch in flight ends
	unreported error
	runs       int
}

// New builds a poller; nothing is fetched until the first Get (or the
// first background tick).
func New[T any](fetch func(context.Context) (T, error), cfg Config) *Poller[T] {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.WaitFailing <= 0 {
		cfg.WaitFailing = 250 * time.Millisecond
	}
	if cfg.Wait.Fraction <= 0 || cfg.Wait.Fraction > 1 {
		cfg.Wait.Fraction = 1
	}
	p := &Poller[T]{fetch: fetch, cfg: cfg}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	if cfg.Every > 0 {
		go p.background()
	}
	return p
}

// Get returns the last good value, starting a fetch if none runs and the
// last one started an interval ago or more, and waiting for the fetch in
// flight for its share of ctx's deadline, unless the last fetch failed.
func (p *Poller[T]) Get(ctx context.Context) Result[T] {
	wait := p.start(true)
	if wait != nil {
		wctx, cancel := Within(ctx, p.cfg.Wait)
		if p.failing() {
			var c2 context.CancelFunc
			wctx, c2 = context.WithTimeout(wctx, p.cfg.WaitFailing)
			defer c2()
		}
		select {
		case <-wait:
		case <-wctx.Done():
		}
		cancel()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	r := p.res
	r.Unreported, p.unreported = p.unreported, nil
	r.At = p.cfg.Now()
	if p.running != nil {
		r.Running = p.started
	}
	return r
}

// failing reports whether the last fetch failed while a value is kept: a
// source that is down (a hung Slurm command) would make every scrape wait
// out its share for nothing, so such a scrape waits WaitFailing at most
// (long enough for a source that is back) and is then served the kept
// value while the fetch goes on in the background.
func (p *Poller[T]) failing() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.res.Err != nil && p.res.Has()
}

// start begins a fetch when one is due and returns the channel of the
// fetch in flight (nil: none). due says whether the interval applies.
func (p *Poller[T]) start(due bool) chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.cfg.Now()
	every := p.cfg.Interval
	if p.cfg.Retry > 0 && p.res.Err != nil {
		every = p.cfg.Retry
	}
	if p.running == nil && p.ctx.Err() == nil &&
		(!due || p.started.IsZero() || now.Sub(p.started) >= every) {
		p.started = now
		p.runs++
		done := make(chan struct{})
		p.running = done
		go p.run(done)
	}
	return p.running
}

func (p *Poller[T]) run(done chan struct{}) {
	ctx, cancel := p.ctx, context.CancelFunc(func() {})
	if p.cfg.Timeout > 0 {
		ctx, cancel = context.WithTimeout(ctx, p.cfg.Timeout)
	}
	v, err := p.fetch(ctx)
	cancel()
	p.mu.Lock()
	p.res.Err = err
	if err == nil {
		p.res.Value, p.res.Good = v, p.cfg.Now()
	} else {
		p.unreported = err
	}
	p.running = nil
	p.mu.Unlock()
	close(done)
}

// background fetches every cfg.Every until Close (RAPL counters must be
// read often enough to see each wrap, scrapes or not).
func (p *Poller[T]) background() {
	t := time.NewTicker(p.cfg.Every)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			p.start(false)
		case <-p.ctx.Done():
			return
		}
	}
}

// Close cancels a fetch in flight and stops the background fetches; later
// Gets serve what is kept. It waits up to 500 ms for the cancelled fetch
// to end, so that a command it ran (and that command's process group) is
// killed before the process exits.
func (p *Poller[T]) Close() {
	p.cancel()
	p.mu.Lock()
	running := p.running
	p.mu.Unlock()
	if running != nil {
		select {
		case <-running:
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// Runs says how many fetches were started (tests, self-metrics).
func (p *Poller[T]) Runs() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.runs
}
