// SPDX-License-Identifier: Apache-2.0

package gpu

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"sync"
)

// Fake serves a fixed set of devices: `make demo` runs it from a JSON file
// (--gpu.backend=fake --gpu.fake-file=...), and tests use it as the fake
// DCGM behind the Backend interface.
type Fake struct {
	name string
	mu   sync.Mutex
	snap Snapshot
	xid  []XidEvent // handed out by the first snapshot only
	err  error      // returned by every Snapshot when set
}

// fakeFile is the JSON layout of --gpu.fake-file.
type fakeFile struct {
	Devices []Device   `json:"devices"`
	Xid     []XidEvent `json:"xid"`
	Errors  []struct {
		Call string `json:"call"`
		UUID string `json:"uuid"`
		Err  string `json:"err"`
	} `json:"errors"`
}

// OpenFake reads a fake-backend JSON file.
func OpenFake(path string) (*Fake, error) {
	if path == "" {
		return nil, errors.New("--gpu.backend=fake needs --gpu.fake-file")
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("gpu fake file: %w", err)
	}
	var f fakeFile
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("gpu fake file %s: %w", path, err)
	}
	snap := Snapshot{Devices: f.Devices}
	for _, e := range f.Errors {
		snap.Errors = append(snap.Errors, CallError{Call: e.Call, UUID: e.UUID, Err: errors.New(e.Err)})
	}
	fk := NewFake("fake", snap)
	fk.xid = f.Xid
	return fk, nil
}

// NewFake serves snap under a backend name; snap.Xid is handed out once.
func NewFake(name string, snap Snapshot) *Fake {
	fk := &Fake{name: name, snap: snap, xid: snap.Xid}
	fk.snap.Xid = nil
	return fk
}

// SetError makes every later Snapshot fail with err (nil clears it).
func (f *Fake) SetError(err error) {
	f.mu.Lock()
	f.err = err
	f.mu.Unlock()
}

// AddXid queues events for the next snapshot.
func (f *Fake) AddXid(ev ...XidEvent) {
	f.mu.Lock()
	f.xid = append(f.xid, ev...)
	f.mu.Unlock()
}

func (f *Fake) Name() string { return f.name }

func (f *Fake) Snapshot(ctx context.Context) (*Snapshot, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return nil, f.err
	}
	out := &Snapshot{Errors: slices.Clone(f.snap.Errors), Xid: f.xid}
	f.xid = nil
	for _, d := range f.snap.Devices {
		d.PIDs = slices.Clone(d.PIDs)
		d.Values = maps.Clone(d.Values)
		out.Devices = append(out.Devices, d)
	}
	return out, nil
}

func (f *Fake) Close() error { return nil }
