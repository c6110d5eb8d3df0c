//go:build cgo && !nogpu

package gpu

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// NVMLBuilt reports whether this binary carries the NVML backend.
const NVMLBuilt = true

// nvmlBackend reads devices through NVML. Every NVML call happens after a
// successful Init: go-nvml aborts the process when a symbol is used before
// the library was loaded.
type nvmlBackend struct {
	lib nvml.Interface
	log *slog.Logger

	// sem serialises snapshots (GPM keeps the previous sample). It is a
	// channel so a scrape waits for a slow or hung NVML read of another
	// scrape only until its own deadline, instead of piling up.
	sem chan struct{}
	gpm map[string]*gpmState
	xid *xidPoller
}

func openNVML(log *slog.Logger) (Backend, error) { return NewNVML(nvml.New(), log) }

// NewNVML initialises lib (the real library or go-nvml's mock) and starts
// the Xid event poller. Nothing but Init is called when Init fails.
func NewNVML(lib nvml.Interface, log *slog.Logger) (Backend, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if ret := lib.Init(); ret != nvml.SUCCESS {
		return nil, fmt.Errorf("%w: nvml init: %v", ErrNoDevice, ret)
	}
	n, ret := lib.DeviceGetCount()
	if ret != nvml.SUCCESS || n == 0 {
		lib.Shutdown()
		if ret == nvml.SUCCESS {
			return nil, fmt.Errorf("%w: nvml sees no device", ErrNoDevice)
		}
		return nil, fmt.Errorf("%w: nvml device count: %v", ErrNoDevice, ret)
	}
	b := &nvmlBackend{lib: lib, log: log, sem: make(chan struct{}, 1), gpm: map[string]*gpmState{}}
	b.xid = startXidPoller(lib, n, log)
	return b, nil
}

func (b *nvmlBackend) Name() string { return "nvml" }

func (b *nvmlBackend) Close() error {
	b.sem <- struct{}{}
	defer func() { <-b.sem }()
	if b.xid != nil {
		b.xid.stop()
		b.xid = nil
	}
	for _, g := range b.gpm {
		g.free()
	}
	b.gpm = map[string]*gpmState{}
	if ret := b.lib.Shutdown(); ret != nvml.SUCCESS {
		return fmt.Errorf("nvml shutdown: %v", ret)
	}
	return nil
}

// calls records failed calls of one snapshot.
type calls struct{ snap *Snapshot }

// ok reports whether ret is success; NOT_SUPPORTED (a feature this device
// or instance lacks) is silent, anything else is listed.
func (c calls) ok(call, uuid string, ret nvml.Return) bool {
	switch ret {
	case nvml.SUCCESS:
		return true
	case nvml.ERROR_NOT_SUPPORTED:
		return false
	}
	c.snap.Errors = append(c.snap.Errors, CallError{Call: call, UUID: uuid, Err: ret})
	return false
}

func (b *nvmlBackend) Snapshot(ctx context.Context) (*Snapshot, error) {
	select {
	case b.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("waiting for another scrape's NVML read: %w", ctx.Err())
	}
	defer func() { <-b.sem }()
	snap := &Snapshot{}
	c := calls{snap}
	n, ret := b.lib.DeviceGetCount()
	if ret != nvml.SUCCESS {
		return nil, fmt.Errorf("nvml device count: %v", ret)
	}
	for i := 0; i < n; i++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		dev, ret := b.lib.DeviceGetHandleByIndex(i)
		if !c.ok("DeviceGetHandleByIndex", fmt.Sprintf("index %d", i), ret) {
			continue
		}
		uuid, ret := dev.GetUUID()
		if !c.ok("GetUUID", fmt.Sprintf("index %d", i), ret) {
			continue // a device without a UUID cannot be labelled
		}
		d := Device{Index: i, Minor: -1, UUID: uuid, Values: map[Field]float64{}}
		if name, ret := dev.GetName(); c.ok("GetName", uuid, ret) {
			d.Model = name
		}
		if m, ret := dev.GetMinorNumber(); c.ok("GetMinorNumber", uuid, ret) {
			d.Minor = m
		}
		if cur, _, ret := dev.GetMigMode(); c.ok("GetMigMode", uuid, ret) && cur == nvml.DEVICE_MIG_ENABLE {
			d.MIGEnabled = true
		}
		b.readTelemetry(c, dev, &d)
		if !d.MIGEnabled {
			d.PIDs = readPIDs(c, dev, uuid)
			b.readGPM(c, dev, &d)
		}
		snap.Devices = append(snap.Devices, d)
		if d.MIGEnabled {
			snap.Devices = append(snap.Devices, b.readMIG(c, dev, d)...)
		}
	}
	if b.xid != nil {
		snap.Xid = b.xid.drain()
	}
	return snap, nil
}

// readTelemetry fills the values NVML reads per physical GPU.
func (b *nvmlBackend) readTelemetry(c calls, dev nvml.Device, d *Device) {
	u, v := d.UUID, d.Values
	if m, ret := dev.GetMemoryInfo(); c.ok("GetMemoryInfo", u, ret) {
		v[MemoryTotalBytes], v[MemoryUsedBytes] = float64(m.Total), float64(m.Used)
	}
	if r, ret := dev.GetUtilizationRates(); c.ok("GetUtilizationRates", u, ret) {
		v[UtilizationRatio], v[MemoryUtilRatio] = float64(r.Gpu)/100, float64(r.Memory)/100
	}
	if mw, ret := dev.GetPowerUsage(); c.ok("GetPowerUsage", u, ret) {
		v[PowerWatts] = float64(mw) / 1000
	}
	if mj, ret := dev.GetTotalEnergyConsumption(); c.ok("GetTotalEnergyConsumption", u, ret) {
		v[EnergyJoules] = float64(mj) / 1000
	}
	if t, ret := dev.GetTemperature(nvml.TEMPERATURE_GPU); c.ok("GetTemperature", u, ret) {
		v[TemperatureCelsius] = float64(t)
	}
	if mhz, ret := dev.GetClockInfo(nvml.CLOCK_SM); c.ok("GetClockInfo", u, ret) {
		v[SMClockHertz] = float64(mhz) * 1e6
	}
	if n, ret := dev.GetTotalEccErrors(nvml.MEMORY_ERROR_TYPE_CORRECTED, nvml.VOLATILE_ECC); c.ok("GetTotalEccErrors", u, ret) {
		v[ECCCorrected] = float64(n)
	}
	if n, ret := dev.GetTotalEccErrors(nvml.MEMORY_ERROR_TYPE_UNCORRECTED, nvml.VOLATILE_ECC); c.ok("GetTotalEccErrors", u, ret) {
		v[ECCUncorrected] = float64(n)
	}
	// NVML's PCIe counter is a 20 ms sample in KiB/s; GPM (below) replaces
	// it with an average over the scrape interval where supported.
	if kb, ret := dev.GetPcieThroughput(nvml.PCIE_UTIL_TX_BYTES); c.ok("GetPcieThroughput", u, ret) {
		v[PCIeTXBytesPerSecond] = float64(kb) * 1024
	}
	if kb, ret := dev.GetPcieThroughput(nvml.PCIE_UTIL_RX_BYTES); c.ok("GetPcieThroughput", u, ret) {
		v[PCIeRXBytesPerSecond] = float64(kb) * 1024
	}
}

func readPIDs(c calls, dev nvml.Device, uuid string) []int {
	procs, ret := dev.GetComputeRunningProcesses()
	if !c.ok("GetComputeRunningProcesses", uuid, ret) {
		return nil
	}
	pids := make([]int, 0, len(procs))
	for _, p := range procs {
		pids = append(pids, int(p.Pid))
	}
	return pids
}

// readMIG lists the MIG instances of a MIG-enabled parent.
func (b *nvmlBackend) readMIG(c calls, dev nvml.Device, parent Device) []Device {
	max, ret := dev.GetMaxMigDeviceCount()
	if !c.ok("GetMaxMigDeviceCount", parent.UUID, ret) {
		return nil
	}
	var out []Device
	for j := 0; j < max; j++ {
		mig, ret := dev.GetMigDeviceHandleByIndex(j)
		if ret == nvml.ERROR_NOT_FOUND {
			continue // an empty slot
		}
		if !c.ok("GetMigDeviceHandleByIndex", parent.UUID, ret) {
			continue
		}
		uuid, ret := mig.GetUUID()
		if !c.ok("GetUUID", parent.UUID, ret) {
			continue
		}
		d := Device{Index: parent.Index, Minor: parent.Minor, UUID: uuid, Model: parent.Model,
			ParentUUID: parent.UUID, Values: map[Field]float64{}}
		if name, ret := mig.GetName(); c.ok("GetName", uuid, ret) {
			d.Model = name
		}
		if id, ret := mig.GetGpuInstanceId(); c.ok("GetGpuInstanceId", uuid, ret) {
			d.GPUInstanceID = id
		}
		if id, ret := mig.GetComputeInstanceId(); c.ok("GetComputeInstanceId", uuid, ret) {
			d.ComputeInstanceID = id
		}
		if m, ret := mig.GetMemoryInfo(); c.ok("GetMemoryInfo", uuid, ret) {
			d.Values[MemoryTotalBytes], d.Values[MemoryUsedBytes] = float64(m.Total), float64(m.Used)
		}
		d.PIDs = readPIDs(c, mig, uuid)
		out = append(out, d)
	}
	return out
}
