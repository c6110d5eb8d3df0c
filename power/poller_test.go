package power

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestPollerOncePerInterval(t *testing.T) {
	now := time.Unix(1000, 0)
	calls := 0
	p := NewPoller(func(context.Context) (int, error) {
		calls++
		if calls == 2 {
			return 0, errors.New("boom")
		}
		return calls, nil
	}, time.Minute, time.Second, func() time.Time { return now })
	ctx := context.Background()
	for i := 0; i < 5; i++ {
		if v, _, ok, err := p.Get(ctx); v != 1 || !ok || err != nil {
			t.Fatalf("get %d: %v %v %v", i, v, ok, err)
		}
	}
	now = now.Add(time.Minute)
	v, _, ok, err := p.Get(ctx) // second fetch fails: old value kept, error once
	if v != 1 || !ok || err == nil {
		t.Fatalf("after failure: %v %v %v", v, ok, err)
	}
	if _, _, _, err := p.Get(ctx); err != nil {
		t.Fatalf("error reported twice: %v", err)
	}
	now = now.Add(time.Minute)
	if v, at, _, _ := p.Get(ctx); v != 3 || !at.Equal(now) || calls != 3 {
		t.Fatalf("third: v=%v at=%v calls=%d", v, at, calls)
	}
}
