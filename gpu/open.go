// SPDX-License-Identifier: Apache-2.0

package gpu

import (
	"errors"
	"fmt"
	"log/slog"
)

// Config selects and configures a backend.
type Config struct {
	// Backend is auto, nvml, dcgm, fake or none.
	Backend string
	// FakeFile is the JSON fixture the fake backend serves.
	FakeFile string
	// DCGM configures the built-in DCGM backend (address, profiling).
	DCGM   DCGMOptions
	Logger *slog.Logger
	// OpenNVML and OpenDCGM replace the built-in openers (tests inject
	// go-nvml's mock or a fake DCGM here); nil uses the built-in ones.
	OpenNVML func(log *slog.Logger) (Backend, error)
	OpenDCGM func(log *slog.Logger) (Backend, error)
}

// Backends lists the accepted --gpu.backend values.
var Backends = []string{"auto", "nvml", "dcgm", "fake", "none"}

// Open returns the configured backend. "auto" tries DCGM (a reachable
// host engine gives profiling without NVML's per-process limits), then
// NVML. An error wrapping ErrNoDevice means no GPU can be read here.
func Open(cfg Config) (Backend, error) {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	nv, dc := cfg.OpenNVML, cfg.OpenDCGM
	if nv == nil {
		nv = openNVML
	}
	if dc == nil {
		dc = func(log *slog.Logger) (Backend, error) { return openDCGM(cfg.DCGM, log) }
	}
	// A DCGM host engine can restart, or start after jobscope at boot:
	// DCGM is read through Reconnecting, with NVML answering meanwhile.
	dcgmFirst := func(first Backend) Backend {
		used := first
		open := func() (Backend, error) {
			if b := used; b != nil {
				used = nil
				return b, nil
			}
			return dc(log)
		}
		return NewReconnecting("dcgm", open, func() (Backend, error) { return nv(log) }, log, nil)
	}
	switch cfg.Backend {
	case "", "auto":
		b, err := dc(log)
		if err == nil {
			return dcgmFirst(b), nil
		}
		b, err2 := nv(log)
		if err2 == nil {
			// One line says why; when NVML fails too, the caller logs
			// both reasons in one line.
			log.Info("DCGM not used, reading GPUs through NVML", "err", err)
			return b, nil
		}
		_, err2 = wrapNoDevice(nil, err2)
		return nil, fmt.Errorf("%w (%v)", err2, err)
	case "nvml":
		return wrapNoDevice(nv(log))
	case "dcgm":
		b, err := dc(log)
		if err != nil && (errors.Is(err, ErrNotBuilt) || errors.Is(err, ErrNoLibrary) || !errors.Is(err, ErrNoDevice)) {
			return wrapNoDevice(nil, err) // nothing to wait for, or a configuration mistake
		}
		// Reachable, or only the host engine is missing: it may come.
		return dcgmFirst(b), nil
	case "fake":
		return OpenFake(cfg.FakeFile)
	case "none":
		return nil, fmt.Errorf("%w: --gpu.backend=none", ErrNoDevice)
	}
	return nil, fmt.Errorf("unknown GPU backend %q (want one of %v)", cfg.Backend, Backends)
}

func wrapNoDevice(b Backend, err error) (Backend, error) {
	if err != nil && !errors.Is(err, ErrNoDevice) {
		err = fmt.Errorf("%w: %w", ErrNoDevice, err)
	}
	return b, err
}
