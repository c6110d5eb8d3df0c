// SPDX-License-Identifier: Apache-2.0

package power

import (
	"context"
	"time"

	"github.com/jobscope/jobscope/internal/poll"
)

// newPoller is how the power collector polls a slow source (see
// collector/power): these tests run the sources through it.
func newPoller[T any](fetch func(context.Context) (T, error), interval, timeout time.Duration, now func() time.Time) *poll.Poller[T] {
	return poll.New(fetch, poll.Config{Interval: interval, Timeout: timeout, Now: now})
}

// get returns the last good value, when it was fetched, whether there is
// one, and a failure not handed out before.
func get[T any](ctx context.Context, p *poll.Poller[T]) (T, time.Time, bool, error) {
	r := p.Get(ctx)
	return r.Value, r.Good, r.Has(), r.Unreported
}
