// SPDX-License-Identifier: Apache-2.0

package gpu

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// Reconnect waits, after a lost connection, double the previous wait between
// tries, from ReconnectFirst up to ReconnectMax.
const (
	ReconnectFirst = time.Second
	ReconnectMax   = 5 * time.Minute
)

// Reconnecting keeps a backend whose connection can drop (DCGM's host
// engine restarting, or starting after jobscope at boot) usable: when a
// snapshot fails, the backend is closed and opened again later with a
// doubling wait. Meanwhile the fallback (NVML) answers, marked with Via, or,
// without one, the last good snapshot is served again marked Stale.
type Reconnecting struct {
	name     string
	open     func() (Backend, error)
	fallback func() (Backend, error) // nil: none
	log      *slog.Logger
	now      func() time.Time

	sem     chan struct{} // one snapshot at a time, bounded by each caller's deadline
	cur     Backend
	fb      Backend
	fbErr   error
	wait    time.Duration
	retryAt time.Time
	down    bool // an outage is logged once, with its end
	last    *Snapshot
	lastAt  time.Time
}

// NewReconnecting opens the backend once; a failure here is not final: the
// next snapshots retry. name is the configured backend's flag value.
func NewReconnecting(name string, open, fallback func() (Backend, error), log *slog.Logger, now func() time.Time) *Reconnecting {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if now == nil {
		now = time.Now
	}
	r := &Reconnecting{name: name, open: open, fallback: fallback, log: log, now: now, sem: make(chan struct{}, 1)}
	r.connect()
	return r
}

func (r *Reconnecting) Name() string { return r.name }

// connect tries to open the backend; on failure it schedules the next try.
func (r *Reconnecting) connect() {
	b, err := r.open()
	if err == nil {
		r.cur, r.wait = b, 0
		if r.down {
			r.log.Info("GPU backend reachable again", "backend", r.name)
			r.down = false
		}
		r.closeFallback()
		return
	}
	r.wait = min(max(2*r.wait, ReconnectFirst), ReconnectMax)
	r.retryAt = r.now().Add(r.wait)
	if !r.down {
		r.log.Warn("GPU backend unreachable: trying again with a doubling wait; meanwhile "+r.meanwhile(),
			"backend", r.name, "err", err, "next_try_in", r.wait)
		r.down = true
	}
}

func (r *Reconnecting) meanwhile() string {
	if r.fallback != nil {
		return "the fallback answers"
	}
	return "the last reading is served, marked stale"
}

// Snapshot reads the backend, reconnecting when due.
func (r *Reconnecting) Snapshot(ctx context.Context) (*Snapshot, error) {
	select {
	case r.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("waiting for another scrape's GPU read: %w", ctx.Err())
	}
	defer func() { <-r.sem }()
	if r.cur == nil && !r.now().Before(r.retryAt) {
		r.connect()
	}
	if r.cur != nil {
		s, err := r.cur.Snapshot(ctx)
		if err == nil {
			r.last, r.lastAt = s, r.now()
			return s, nil
		}
		if ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded) {
			return nil, err // the scrape ran out of time: not a lost connection
		}
		r.log.Warn("GPU backend lost: closing it, trying again with a doubling wait; meanwhile "+r.meanwhile(),
			"backend", r.name, "err", err)
		r.down = true
		r.cur.Close()
		r.cur = nil
		r.wait = ReconnectFirst
		r.retryAt = r.now().Add(r.wait)
	}
	return r.instead(ctx)
}

// instead answers while the backend is away.
func (r *Reconnecting) instead(ctx context.Context) (*Snapshot, error) {
	if r.fallback != nil && r.fb == nil && r.fbErr == nil {
		r.fb, r.fbErr = r.fallback()
	}
	if r.fb != nil {
		s, err := r.fb.Snapshot(ctx)
		if err == nil {
			s.Via = r.fb.Name()
			return s, nil
		}
	}
	if r.last == nil {
		return nil, fmt.Errorf("%w: %s unreachable and nothing read yet", ErrNoDevice, r.name)
	}
	s := *r.last
	s.Xid, s.Errors = nil, nil // handed out once already
	s.Stale, s.Age = true, r.now().Sub(r.lastAt)
	return &s, nil
}

func (r *Reconnecting) closeFallback() {
	if r.fb != nil {
		r.fb.Close()
	}
	r.fb, r.fbErr = nil, nil
}

// Close closes the backend and the fallback.
func (r *Reconnecting) Close() error {
	r.sem <- struct{}{}
	defer func() { <-r.sem }()
	r.closeFallback()
	if r.cur != nil {
		err := r.cur.Close()
		r.cur = nil
		return err
	}
	return nil
}
