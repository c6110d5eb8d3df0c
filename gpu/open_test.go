// SPDX-License-Identifier: Apache-2.0

package gpu

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
)

func fakeOpener(name string, err error) func(*slog.Logger) (Backend, error) {
	return func(*slog.Logger) (Backend, error) {
		if err != nil {
			return nil, err
		}
		return NewFake(name, Snapshot{}), nil
	}
}

func TestOpenSelectsBackend(t *testing.T) {
	down := errors.New("no host engine")
	for _, tc := range []struct {
		backend    string
		dcgm, nvml error
		want       string // backend name, or "" for an error
		noDevice   bool
	}{
		{"auto", nil, nil, "dcgm", false},
		{"", down, nil, "nvml", false},
		{"auto", down, ErrNoDevice, "", true},
		{"nvml", nil, nil, "nvml", false},
		{"nvml", nil, ErrNotBuilt, "", true},
		{"dcgm", down, nil, "", true},
		{"none", nil, nil, "", true},
		{"cuda", nil, nil, "", false},
	} {
		b, err := Open(Config{Backend: tc.backend, OpenDCGM: fakeOpener("dcgm", tc.dcgm), OpenNVML: fakeOpener("nvml", tc.nvml)})
		switch {
		case tc.want != "" && (err != nil || b.Name() != tc.want):
			t.Errorf("%s: got %v, %v; want %s", tc.backend, b, err, tc.want)
		case tc.want == "" && (err == nil || errors.Is(err, ErrNoDevice) != tc.noDevice):
			t.Errorf("%s: err %v, want no-device %v", tc.backend, err, tc.noDevice)
		}
	}
}

// DCGM and NVML are missing in static builds, and libdcgm is missing on
// this machine: each says so as "no device", never as a crash.
func TestOpenBuiltins(t *testing.T) {
	if !DCGMBuilt {
		if _, err := Open(Config{Backend: "dcgm"}); !errors.Is(err, ErrNoDevice) || !errors.Is(err, ErrNotBuilt) {
			t.Errorf("dcgm: %v", err)
		}
	}
	if !NVMLBuilt {
		if _, err := Open(Config{Backend: "nvml"}); !errors.Is(err, ErrNotBuilt) {
			t.Errorf("nvml without cgo: %v", err)
		}
	}
}

func TestFakeFile(t *testing.T) {
	b, err := Open(Config{Backend: "fake", FakeFile: "../testdata/gpu/demo.json"})
	if err != nil {
		t.Fatal(err)
	}
	s, err := b.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Devices) != 6 || len(s.Xid) != 1 || s.Devices[0].Values[PowerWatts] != 612.5 || !s.Devices[4].IsMIG() {
		t.Fatalf("snapshot %+v", s)
	}
	s.Devices[0].Values[PowerWatts] = 0 // callers may not change the fake
	s2, _ := b.Snapshot(context.Background())
	if s2.Devices[0].Values[PowerWatts] != 612.5 || len(s2.Xid) != 0 {
		t.Errorf("second snapshot %+v", s2)
	}

	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte("{"), 0o644)
	for _, f := range []string{"", filepath.Join(dir, "missing.json"), bad} {
		if _, err := Open(Config{Backend: "fake", FakeFile: f}); err == nil || errors.Is(err, ErrNoDevice) {
			t.Errorf("%q: err %v, want a configuration error", f, err)
		}
	}
}

func TestFakeErrors(t *testing.T) {
	f := NewFake("dcgm", Snapshot{Errors: []CallError{{Call: "GetPowerUsage", UUID: "GPU-1", Err: errors.New("boom")}}})
	s, _ := f.Snapshot(context.Background())
	if len(s.Errors) != 1 || s.Errors[0].Error() != "GetPowerUsage on GPU-1: boom" {
		t.Errorf("errors %v", s.Errors)
	}
	f.SetError(errors.New("host engine gone"))
	if _, err := f.Snapshot(context.Background()); err == nil {
		t.Error("want the set error")
	}
}
