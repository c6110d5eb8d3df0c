// SPDX-License-Identifier: Apache-2.0

package gpu_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/jobscope/jobscope/gpu"
	"github.com/jobscope/jobscope/internal/testutil"
)

// hostEngine stands in for nv-hostengine: while down, opening fails and
// the open backend's snapshots fail.
type hostEngine struct {
	down   bool
	opens  int
	closed int
	fake   *gpu.Fake
}

func (h *hostEngine) open() (gpu.Backend, error) {
	h.opens++
	if h.down {
		return nil, errors.New("connection refused")
	}
	h.fake = gpu.NewFake("dcgm", gpu.Snapshot{Devices: []gpu.Device{{Index: 0, UUID: "GPU-a", Values: map[gpu.Field]float64{gpu.PowerWatts: 300}}}})
	return &closer{Fake: h.fake, h: h}, nil
}

func (h *hostEngine) stop() {
	h.down = true
	if h.fake != nil {
		h.fake.SetError(errors.New("connection reset by peer"))
	}
}

type closer struct {
	*gpu.Fake
	h *hostEngine
}

func (c *closer) Close() error { c.h.closed++; return nil }

func snap(t *testing.T, b gpu.Backend) *gpu.Snapshot {
	t.Helper()
	s, err := b.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestReconnectingServesFallbackThenReconnects(t *testing.T) {
	h := &hostEngine{}
	clk := testutil.NewClock(time.Unix(1_800_000_000, 0))
	nvml := gpu.NewFake("nvml", gpu.Snapshot{Devices: []gpu.Device{{Index: 0, UUID: "GPU-a", Values: map[gpu.Field]float64{gpu.PowerWatts: 299}}}})
	fallbacks := 0
	var logs bytes.Buffer
	r := gpu.NewReconnecting("dcgm", h.open, func() (gpu.Backend, error) { fallbacks++; return nvml, nil },
		slog.New(slog.NewTextHandler(&logs, nil)), clk.Now)
	if s := snap(t, r); s.Via != "" || s.Stale {
		t.Fatalf("healthy: via %q stale %v", s.Via, s.Stale)
	}

	h.stop() // nv-hostengine restarts
	for i := 0; i < 5; i++ {
		s := snap(t, r)
		if s.Via != "nvml" || s.Devices[0].Values[gpu.PowerWatts] != 299 {
			t.Fatalf("scrape %d while DCGM is away: via %q, %v", i, s.Via, s.Devices)
		}
		clk.Add(500 * time.Millisecond)
	}
	if h.closed != 1 || fallbacks != 1 {
		t.Errorf("closed %d (want 1), fallback opened %d times (want 1)", h.closed, fallbacks)
	}
	// Tries at +1 s, then +1, +2, +4 s after each failure: no storm of opens.
	if h.opens < 2 || h.opens > 4 {
		t.Errorf("%d opens in 2.5 s of outage", h.opens)
	}
	clk.Add(time.Minute)
	h.down = false
	if s := snap(t, r); s.Via != "" || s.Devices[0].Values[gpu.PowerWatts] != 300 {
		t.Fatalf("after the host engine came back: via %q %v", s.Via, s.Devices)
	}
	out := logs.String()
	if n := strings.Count(out, "GPU backend lost"); n != 1 {
		t.Errorf("%d 'lost' lines for one outage:\n%s", n, out)
	}
	if !strings.Contains(out, "reachable again") {
		t.Errorf("no line for the end of the outage:\n%s", out)
	}
}

func TestReconnectingWithoutFallbackServesLastMarkedStale(t *testing.T) {
	h := &hostEngine{}
	clk := testutil.NewClock(time.Unix(1_800_000_000, 0))
	r := gpu.NewReconnecting("dcgm", h.open, nil, nil, clk.Now)
	h.fake.AddXid(gpu.XidEvent{UUID: "GPU-a", Xid: 79})
	first := snap(t, r)
	if len(first.Xid) != 1 {
		t.Fatal("the Xid event is handed out once")
	}
	h.stop()
	clk.Add(30 * time.Second)
	s := snap(t, r)
	if !s.Stale || s.Age != 30*time.Second || s.Devices[0].Values[gpu.PowerWatts] != 300 || len(s.Xid) != 0 {
		t.Fatalf("stale %v age %v devices %v xid %v", s.Stale, s.Age, s.Devices, s.Xid)
	}
}

// A DCGM that cannot be reached at start (jobscope started before
// nv-hostengine at boot) is found later, without a restart of jobscope.
func TestReconnectingAtStart(t *testing.T) {
	h := &hostEngine{down: true}
	clk := testutil.NewClock(time.Unix(1_800_000_000, 0))
	r := gpu.NewReconnecting("dcgm", h.open, nil, nil, clk.Now)
	if _, err := r.Snapshot(context.Background()); !errors.Is(err, gpu.ErrNoDevice) {
		t.Fatalf("nothing read yet: %v", err)
	}
	h.down = false
	clk.Add(2 * time.Second)
	if s := snap(t, r); s.Stale || len(s.Devices) != 1 {
		t.Fatalf("after start: %+v", s)
	}
}

// A scrape that runs out of time is not a lost connection.
func TestReconnectingDeadlineKeepsBackend(t *testing.T) {
	h := &hostEngine{}
	r := gpu.NewReconnecting("dcgm", h.open, nil, nil, nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	h.fake.SetError(context.Canceled)
	r.Snapshot(ctx)
	if h.closed != 0 {
		t.Error("a cancelled scrape closed the backend")
	}
}
