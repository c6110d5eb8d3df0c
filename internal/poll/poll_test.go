// SPDX-License-Identifier: Apache-2.0

package poll

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jobscope/jobscope/internal/testutil"
)

// One fetch per interval; a failure keeps the last good value, says so
// in Err until a fetch succeeds, and is handed out as Unreported once.
func TestOncePerIntervalLastGood(t *testing.T) {
	clk := testutil.NewClock(time.Unix(1000, 0))
	calls := 0
	p := New(failSecond(&calls), Config{Interval: time.Minute, Timeout: time.Second, Now: clk.Now})
	defer p.Close()
	ctx := context.Background()
	for i := 0; i < 5; i++ {
		if r := p.Get(ctx); r.Value != 1 || !r.Fresh() || r.Unreported != nil {
			t.Fatalf("get %d: %+v", i, r)
		}
	}
	clk.Add(time.Minute)
	r := p.Get(ctx)
	if r.Value != 1 || r.Err == nil || r.Unreported == nil || r.Fresh() || r.Age() != time.Minute {
		t.Fatalf("after the failure: %+v", r)
	}
	if r := p.Get(ctx); r.Unreported != nil || r.Err == nil {
		t.Fatalf("failure handed out twice, or forgotten: %+v", r)
	}
	clk.Add(time.Minute)
	if r := p.Get(ctx); r.Value != 3 || !r.Good.Equal(clk.Now()) || r.Err != nil || calls != 3 {
		t.Fatalf("third: %+v, %d calls", r, calls)
	}
}

// Twenty concurrent Gets share one fetch.
func TestSingleFlight(t *testing.T) {
	var calls atomic.Int32
	release := make(chan struct{})
	p := New(func(context.Context) (int, error) {
		calls.Add(1)
		<-release
		return 7, nil
	}, Config{Interval: time.Hour})
	defer p.Close()
	var wg sync.WaitGroup
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if r := p.Get(context.Background()); r.Value != 7 {
				t.Errorf("got %+v", r)
			}
		}()
	}
	time.Sleep(50 * time.Millisecond) // let every Get join the fetch
	close(release)
	wg.Wait()
	if n := calls.Load(); n != 1 {
		t.Errorf("%d fetches for 20 concurrent Gets", n)
	}
}

// A hanging fetch holds a Get for its share of the deadline only; the Get
// says the refresh is still running; Close cancels the fetch.
func TestWaitShareAndClose(t *testing.T) {
	cancelled := make(chan struct{})
	p := New(func(ctx context.Context) (int, error) {
		<-ctx.Done()
		close(cancelled)
		return 0, ctx.Err()
	}, Config{Wait: Share{Fraction: 0.25}})
	// A Get that ignored its share would wait out the whole deadline (4 s);
	// the share is 1 s. The bound sits halfway, 2 s past the share, so
	// that a loaded machine's late timer cannot trip it (with a 0.5 share
	// of 2 s, the bound was 0.5 s past it). The exact share is
	// TestWithinReserve's.
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
	defer cancel()
	start := time.Now()
	r := p.Get(ctx)
	if waited := time.Since(start); waited > 3*time.Second {
		t.Errorf("waited %v of a 4 s deadline with a 0.25 share", waited)
	}
	if r.Has() || r.Running.IsZero() || r.Fresh() {
		t.Errorf("%+v", r)
	}
	p.Close()
	select {
	case <-cancelled:
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not cancel the fetch")
	}
}

func TestWithinReserve(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	dl, _ := ctx.Deadline()
	w, wc := Within(ctx, Share{Fraction: 0.9, MaxReserve: 500 * time.Millisecond})
	defer wc()
	got, _ := w.Deadline()
	if d := dl.Sub(got); d < 490*time.Millisecond || d > 510*time.Millisecond {
		t.Errorf("reserve %v, want 0.5 s (a tenth, at most 0.5 s)", d)
	}
	w2, wc2 := Within(context.Background(), Share{Fraction: 0.5})
	defer wc2()
	if _, ok := w2.Deadline(); ok {
		t.Error("a deadline out of none")
	}
}

// Every fetches in the background without any Get.
func TestBackground(t *testing.T) {
	var calls atomic.Int32
	p := New(func(context.Context) (int, error) { return int(calls.Add(1)), nil }, Config{Every: 10 * time.Millisecond})
	deadline := time.Now().Add(10 * time.Second)
	for calls.Load() < 3 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	p.Close()
	if calls.Load() < 3 {
		t.Fatalf("%d background fetches", calls.Load())
	}
}

// A source that failed and now hangs: a scrape waits WaitFailing at most,
// not its share of a 10 s deadline, and gets the kept value; a source that
// failed and answers fast again is waited for and gives its new value.
func TestFailingSourceIsNotWaitedOut(t *testing.T) {
	clk := testutil.NewClock(time.Unix(1000, 0))
	var calls atomic.Int32
	hang := make(chan struct{})
	defer close(hang)
	p := New(func(ctx context.Context) (int, error) {
		switch calls.Add(1) {
		case 1:
			return 7, nil
		case 2:
			return 0, errors.New("exit 1")
		case 3:
			select {
			case <-hang:
			case <-ctx.Done():
			}
			return 0, errors.New("timed out")
		}
		return 9, nil
	}, Config{Interval: time.Minute, Wait: Share{Fraction: 0.9}, WaitFailing: 50 * time.Millisecond, Now: clk.Now})
	defer p.Close()
	get := func() (Result[int], time.Duration) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		start := time.Now()
		r := p.Get(ctx)
		return r, time.Since(start)
	}
	if r, _ := get(); r.Value != 7 {
		t.Fatalf("first: %+v", r)
	}
	clk.Add(time.Minute)
	if r, _ := get(); r.Err == nil || r.Value != 7 {
		t.Fatalf("failed fetch: %+v", r)
	}
	clk.Add(time.Minute)
	r, took := get() // the hanging fetch
	if r.Value != 7 || r.Running.IsZero() || took > 2*time.Second {
		t.Fatalf("while the source hangs: %+v after %v, want the kept value within about 50 ms", r, took)
	}
	t.Logf("scrape while the source hangs: %v", took)
	hang <- struct{}{}
	for p.Runs() < 3 || !p.idle() {
		time.Sleep(time.Millisecond)
	}
	clk.Add(time.Minute)
	if r, _ := get(); r.Value != 9 || r.Err != nil {
		t.Fatalf("source back: %+v, want its new value at once", r)
	}
}

// idle reports whether no fetch is in flight.
func (p *Poller[T]) idle() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.running == nil
}

// A seldom-polled source retries a failed fetch after Retry, not after a
// whole Interval, and goes back to Interval once a fetch works.
func TestRetryAfterFailure(t *testing.T) {
	clk := testutil.NewClock(time.Unix(1000, 0))
	calls := 0
	p := New(failSecond(&calls), Config{Interval: 5 * time.Minute, Retry: 30 * time.Second, Now: clk.Now})
	defer p.Close()
	ctx := context.Background()
	steps := []struct {
		after time.Duration
		calls int
	}{
		{0, 1},                 // first fetch
		{30 * time.Second, 1},  // worked: the next is an Interval away
		{270 * time.Second, 2}, // due: fails
		{29 * time.Second, 2},  // the retry is not due yet
		{time.Second, 3},       // Retry after the failure, not Interval
		{30 * time.Second, 3},  // worked again: back to Interval
		{270 * time.Second, 4},
	}
	for i, s := range steps {
		clk.Add(s.after)
		p.Get(ctx)
		if calls != s.calls {
			t.Fatalf("step %d (+%s): %d fetches, want %d", i, s.after, calls, s.calls)
		}
	}
}

// failSecond is a fetch that counts its calls in *calls, returns the
// count, and fails the second one.
func failSecond(calls *int) func(context.Context) (int, error) {
	return func(context.Context) (int, error) {
		*calls++
		if *calls == 2 {
			return 0, errors.New("boom")
		}
		return *calls, nil
	}
}
