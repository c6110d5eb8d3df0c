// SPDX-License-Identifier: Apache-2.0

package power

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"sync"
	"testing"
	"time"
)

// fakeBMC is an in-memory IPMI device: answer builds the reply to each
// request (nil: no reply, the BMC hangs); before is queued ahead of it
// (stale answers, events).
type fakeBMC struct {
	answer func(netfn, cmd byte, data []byte) []byte
	before []IPMIMessage

	mu     sync.Mutex
	queue  []IPMIMessage
	sent   [][]byte
	closed int
}

func (f *fakeBMC) Send(msgid int64, netfn, cmd byte, data []byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sent = append(f.sent, append([]byte{netfn, cmd}, data...))
	f.queue = append(f.queue, f.before...)
	if r := f.answer(netfn, cmd, data); r != nil {
		f.queue = append(f.queue, IPMIMessage{RecvType: RecvTypeResponse, MsgID: msgid, NetFn: netfn | 1, Cmd: cmd, Data: r})
	}
	return nil
}

func (f *fakeBMC) Receive(ctx context.Context) (IPMIMessage, error) {
	f.mu.Lock()
	if len(f.queue) > 0 {
		m := f.queue[0]
		f.queue = f.queue[1:]
		f.mu.Unlock()
		return m, nil
	}
	f.mu.Unlock()
	<-ctx.Done() // like poll(2) on an empty queue
	return IPMIMessage{}, fmt.Errorf("%w (%v)", ErrIPMITimeout, ctx.Err())
}

func (f *fakeBMC) Close() error {
	f.mu.Lock()
	f.closed++
	f.mu.Unlock()
	return nil
}

func fakeInBand(f *fakeBMC, timeout time.Duration) *InBand {
	return &InBand{Path: "/dev/ipmi0", Timeout: timeout, Open: func(string) (IPMIDevice, error) { return f, nil }}
}

func TestInBandRead(t *testing.T) {
	good := readHex(t, "inband-good.hex")
	stale := IPMIMessage{RecvType: RecvTypeResponse, MsgID: -7, NetFn: NetFnDCMI | 1, Cmd: CmdGetPowerReading, Data: []byte{0xC3}}
	event := IPMIMessage{RecvType: RecvTypeEvent, Data: make([]byte, 16)}
	otherCmd := IPMIMessage{RecvType: RecvTypeResponse, MsgID: 1, NetFn: 0x07, Cmd: 0x01, Data: []byte{0}}
	for _, tc := range []struct {
		name   string
		before []IPMIMessage
		answer []byte
		want   error // nil: the good reading
	}{
		{name: "good", answer: good},
		{name: "skips stale answer and event", before: []IPMIMessage{stale, event, otherCmd}, answer: good},
		{name: "no DCMI", answer: []byte{0xC1}, want: ErrUnsupported},
		{name: "not active", answer: readHex(t, "inband-not-active.hex"), want: ErrNotActive},
		{name: "garbage", answer: []byte{0, 1, 2}, want: ErrNoReading},
		{name: "hang", answer: nil, want: ErrIPMITimeout},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeBMC{before: tc.before, answer: func(netfn, cmd byte, data []byte) []byte { return tc.answer }}
			d, err := fakeInBand(f, 50*time.Millisecond).Read(context.Background())
			if tc.want == nil {
				if err != nil || d.Current != 220 || d.Average != 218 {
					t.Fatalf("got %+v %v", d, err)
				}
			} else if !errors.Is(err, tc.want) {
				t.Fatalf("want %v, got %v", tc.want, err)
			}
			if f.closed != 1 || len(f.sent) != 1 || string(f.sent[0]) != "\x2c\x02\xdc\x01\x00\x00" {
				t.Fatalf("closed %d, sent % x", f.closed, f.sent)
			}
		})
	}
}

// TestInBandFlood: a device that only ever hands back unrelated messages
// cannot keep a reading looping.
func TestInBandFlood(t *testing.T) {
	var flood []IPMIMessage
	for range 2 * maxForeign {
		flood = append(flood, IPMIMessage{RecvType: RecvTypeEvent})
	}
	f := &fakeBMC{before: flood, answer: func(byte, byte, []byte) []byte { return readHex(t, "inband-good.hex") }}
	if _, err := fakeInBand(f, time.Second).Read(context.Background()); err == nil {
		t.Fatal("no error from a flood of events")
	}
}

// TestInBandCallerDeadline: the caller's context ends a hung exchange
// even when the reader's own timeout is longer.
func TestInBandCallerDeadline(t *testing.T) {
	f := &fakeBMC{answer: func(byte, byte, []byte) []byte { return nil }}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := fakeInBand(f, time.Hour).Read(ctx); !errors.Is(err, ErrIPMITimeout) {
		t.Fatalf("want timeout, got %v", err)
	}
}

// TestInBandThroughPoller: the poller runs the BMC at most once per
// interval and keeps the last good reading across a hang.
func TestInBandThroughPoller(t *testing.T) {
	var mu sync.Mutex
	hang := false
	f := &fakeBMC{answer: func(byte, byte, []byte) []byte {
		mu.Lock()
		defer mu.Unlock()
		if hang {
			return nil
		}
		return readHex(t, "inband-good.hex")
	}}
	now := time.Unix(1000, 0)
	p := newPoller(fakeInBand(f, 20*time.Millisecond).Read, 30*time.Second, time.Second, func() time.Time { return now })
	for range 3 {
		if d, _, ok, err := get(context.Background(), p); !ok || err != nil || d.Current != 220 {
			t.Fatalf("%+v %v %v", d, ok, err)
		}
	}
	if p.Runs() != 1 {
		t.Fatalf("%d BMC runs in one interval", p.Runs())
	}
	mu.Lock()
	hang = true
	mu.Unlock()
	now = now.Add(30 * time.Second)
	d, at, ok, err := get(context.Background(), p)
	if !ok || d.Current != 220 || !at.Equal(time.Unix(1000, 0)) || !errors.Is(err, ErrIPMITimeout) {
		t.Fatalf("after hang: %+v %v %v %v", d, at, ok, err)
	}
}

func TestFindIPMIDevice(t *testing.T) {
	paths := []string{"/dev/ipmi0", "/dev/ipmi/0", "/dev/ipmidev/0"}
	opener := func(res map[string]error) func(string) (IPMIDevice, error) {
		return func(p string) (IPMIDevice, error) {
			err, ok := res[p]
			if !ok {
				err = fs.ErrNotExist
			}
			if err != nil {
				return nil, &fs.PathError{Op: "open", Path: p, Err: err}
			}
			return &fakeBMC{}, nil
		}
	}
	if p, err := FindIPMIDevice(paths, opener(map[string]error{"/dev/ipmi/0": nil})); p != "/dev/ipmi/0" || err != nil {
		t.Fatalf("devfs name: %q %v", p, err)
	}
	if _, err := FindIPMIDevice(paths, opener(nil)); !errors.Is(err, ErrNoIPMIDevice) {
		t.Fatalf("absent: %v", err)
	}
	if _, err := FindIPMIDevice(paths, opener(map[string]error{"/dev/ipmi0": fs.ErrPermission})); !errors.Is(err, ErrIPMIPermission) {
		t.Fatalf("denied: %v", err)
	}
}
