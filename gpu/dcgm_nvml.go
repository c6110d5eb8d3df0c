// SPDX-License-Identifier: Apache-2.0

//go:build cgo && !nogpu

package gpu

import (
	"log/slog"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// nvmlHelper gives the DCGM backend what DCGM's watched fields lack: the
// compute processes of each device (for mapping through cgroups), MIG
// instance UUIDs, and GPM profiling where DCGM profiling is off, refused
// or paused. It reuses the NVML backend's readers without its Xid poller
// (DCGM watches Xids itself).
type nvmlHelper struct{ b *nvmlBackend }

// openNVMLHelper returns nil when NVML cannot be initialised: the DCGM
// backend then has no PIDs and no GPM fallback, said in one log line.
func openNVMLHelper(log *slog.Logger) *nvmlHelper {
	return newNVMLHelper(nvml.New(), log)
}

func newNVMLHelper(lib nvml.Interface, log *slog.Logger) *nvmlHelper {
	if ret := lib.Init(); ret != nvml.SUCCESS {
		log.Warn("NVML unavailable next to DCGM: no process-based GPU mapping and no GPM fallback", "err", ret)
		return nil
	}
	return &nvmlHelper{b: &nvmlBackend{lib: lib, log: log, caps: probeCaps(lib), gpm: map[string]*gpmState{}, known: map[int]Device{}}}
}

// fill adds the PIDs of d (a GPU or MIG instance) and, if gpm, the GPM
// profiling values of a physical GPU. Failed calls land in snap.Errors
// under NVML's call names.
func (h *nvmlHelper) fill(snap *Snapshot, d *Device, gpm bool) {
	c := calls{snap}
	dev, ret := h.b.lib.DeviceGetHandleByUUID(d.UUID)
	if !c.ok("DeviceGetHandleByUUID", d.UUID, ret) {
		return
	}
	d.PIDs = readPIDs(c, dev, d.UUID)
	if gpm {
		h.b.readGPM(c, dev, d)
	}
}

// fillMIG sets the UUID and PIDs of the MIG device with GPU instance gi
// and compute instance ci on the GPU parent, reading the PIDs through the
// MIG handle found on the parent (no lookup by MIG UUID needed). It
// reports whether the instance was found.
func (h *nvmlHelper) fillMIG(snap *Snapshot, parent string, gi, ci int, d *Device) bool {
	dev, ret := h.b.lib.DeviceGetHandleByUUID(parent)
	if ret != nvml.SUCCESS {
		return false
	}
	n, ret := dev.GetMaxMigDeviceCount()
	if ret != nvml.SUCCESS {
		return false
	}
	for j := 0; j < n; j++ {
		mig, ret := dev.GetMigDeviceHandleByIndex(j)
		if ret != nvml.SUCCESS {
			continue
		}
		g, r1 := mig.GetGpuInstanceId()
		c, r2 := mig.GetComputeInstanceId()
		if r1 != nvml.SUCCESS || r2 != nvml.SUCCESS || g != gi || c != ci {
			continue
		}
		u, ret := mig.GetUUID()
		if ret != nvml.SUCCESS {
			return false
		}
		d.UUID = u
		d.PIDs = readPIDs(calls{snap}, mig, u)
		return true
	}
	return false
}

func (h *nvmlHelper) close() {
	for _, g := range h.b.gpm {
		g.free()
	}
	h.b.gpm = map[string]*gpmState{}
	_ = h.b.lib.Shutdown() // nothing to do if it fails: jobscope is done with NVML
}
