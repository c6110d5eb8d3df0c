// SPDX-License-Identifier: Apache-2.0

//go:build cgo && !nogpu

package gpu

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

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
	sem  chan struct{}
	caps nvmlCaps
	// gpmMu guards the maps only: each device's state is used by the one
	// goroutine reading that device.
	gpmMu sync.Mutex
	gpm   map[string]*gpmState
	known map[int]Device // identity of each index as last read, for a GPU that is lost
	xid   *xidPoller
}

// nvmlCaps are the optional NVML functions this driver exports. go-nvml
// binds symbols lazily, so calling one an older driver lacks ends the
// process: each is looked up once, after Init.
type nvmlCaps struct {
	memV2 bool // nvmlDeviceGetMemoryInfo_v2 (r510+): used memory without the driver's reservation
	gpm   bool // GPM (r520+): profiling counters on Hopper and later
}

func probeCaps(lib nvml.Interface) nvmlCaps {
	has := func(name string) bool { return lib.Extensions().LookupSymbol(name) == nil }
	return nvmlCaps{
		memV2: has("nvmlDeviceGetMemoryInfo_v2"),
		gpm:   has("nvmlGpmQueryDeviceSupport") && has("nvmlGpmSampleGet") && has("nvmlGpmMetricsGet"),
	}
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
		_ = lib.Shutdown() // giving up on NVML anyway
		if ret == nvml.SUCCESS {
			return nil, fmt.Errorf("%w: nvml sees no device", ErrNoDevice)
		}
		return nil, fmt.Errorf("%w: nvml device count: %v", ErrNoDevice, ret)
	}
	b := &nvmlBackend{lib: lib, log: log, sem: make(chan struct{}, 1), caps: probeCaps(lib), gpm: map[string]*gpmState{}, known: map[int]Device{}}
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
	n, ret := b.lib.DeviceGetCount()
	if ret != nvml.SUCCESS {
		return nil, fmt.Errorf("nvml device count: %v", ret)
	}
	// Devices are read at once: NVML is thread-safe, and on GPUs without GPM
	// one device costs tens of milliseconds (the PCIe counters sample for
	// 20 ms each), which would add up on an 8-GPU node.
	parts := make([]Snapshot, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b.readDevice(calls{&parts[i]}, i)
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	snap := &Snapshot{}
	for _, p := range parts {
		snap.Devices = append(snap.Devices, p.Devices...)
		snap.Errors = append(snap.Errors, p.Errors...)
	}
	if b.xid != nil {
		snap.Xid = b.xid.drain()
	}
	return snap, nil
}

// readDevice appends GPU i, and its MIG instances, to c's snapshot.
func (b *nvmlBackend) readDevice(c calls, i int) {
	dev, ret := b.lib.DeviceGetHandleByIndex(i)
	if !c.ok("DeviceGetHandleByIndex", fmt.Sprintf("index %d", i), ret) {
		b.lost(c, i, ret)
		return
	}
	uuid, ret := dev.GetUUID()
	if !c.ok("GetUUID", fmt.Sprintf("index %d", i), ret) {
		b.lost(c, i, ret)
		return // a device without a UUID cannot be labelled
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
	gpm := false
	if !d.MIGEnabled {
		d.PIDs = readPIDs(c, dev, uuid)
		gpm = b.readGPM(c, dev, &d)
	}
	b.readTelemetry(c, dev, &d, !gpm)
	for _, e := range c.snap.Errors {
		if errors.Is(e.Err, nvml.ERROR_GPU_IS_LOST) {
			b.lost(c, i, nvml.ERROR_GPU_IS_LOST) // fell off the bus while being read
			return
		}
	}
	b.gpmMu.Lock()
	b.known[i] = Device{Index: i, Minor: d.Minor, UUID: uuid, Model: d.Model}
	b.gpmMu.Unlock()
	c.snap.Devices = append(c.snap.Devices, d)
	if d.MIGEnabled {
		c.snap.Devices = append(c.snap.Devices, b.readMIG(c, dev, d)...)
	}
}

// readTelemetry fills the values NVML reads per physical GPU.
// lost reports GPU i as lost when ret says the driver lost it (Xid 79, a
// GPU fallen off the bus), under the identity it had when last read: an
// admin must see which GPU went, not a device that quietly vanished.
func (b *nvmlBackend) lost(c calls, i int, ret nvml.Return) {
	if ret != nvml.ERROR_GPU_IS_LOST {
		return
	}
	b.gpmMu.Lock()
	d, ok := b.known[i]
	b.gpmMu.Unlock()
	if !ok {
		d = Device{Index: i, Minor: -1} // lost before it was ever read: no UUID to give
	}
	d.Lost, d.Values = true, map[Field]float64{}
	c.snap.Devices = append(c.snap.Devices, d)
}

// pcie asks for NVML's PCIe counters, which GPM replaces where it runs.
func (b *nvmlBackend) readTelemetry(c calls, dev nvml.Device, d *Device, pcie bool) {
	u, v := d.UUID, d.Values
	b.readMemory(c, dev, d)
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
	// NVML's PCIe counter is a 20 ms sample in KiB/s that blocks the call
	// for those 20 ms; GPM's average over the scrape interval replaces it
	// where supported.
	if !pcie {
		return
	}
	if kb, ret := dev.GetPcieThroughput(nvml.PCIE_UTIL_TX_BYTES); c.ok("GetPcieThroughput", u, ret) {
		v[PCIeTXBytesPerSecond] = float64(kb) * 1024
	}
	if kb, ret := dev.GetPcieThroughput(nvml.PCIE_UTIL_RX_BYTES); c.ok("GetPcieThroughput", u, ret) {
		v[PCIeRXBytesPerSecond] = float64(kb) * 1024
	}
}

// readMemory reads device memory as jobs see it. NVML's first memory call
// counts the driver's own reservation (480 MiB on an H100 with driver 580)
// as used and in the total; the v2 call reports it apart, so used is what
// processes allocated and total minus reserved is what cudaMemGetInfo
// calls total. Drivers before r510 only have the first call.
func (b *nvmlBackend) readMemory(c calls, dev nvml.Device, d *Device) {
	if b.caps.memV2 {
		if m, ret := dev.GetMemoryInfo_v2(); ret == nvml.SUCCESS {
			d.Values[MemoryTotalBytes] = float64(m.Total - m.Reserved)
			d.Values[MemoryUsedBytes] = float64(m.Used)
			return
		}
	}
	if m, ret := dev.GetMemoryInfo(); c.ok("GetMemoryInfo", d.UUID, ret) {
		d.Values[MemoryTotalBytes], d.Values[MemoryUsedBytes] = float64(m.Total), float64(m.Used)
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
	maxMIG, ret := dev.GetMaxMigDeviceCount()
	if !c.ok("GetMaxMigDeviceCount", parent.UUID, ret) {
		return nil
	}
	var out []Device
	for j := 0; j < maxMIG; j++ {
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
		b.readMemory(c, mig, &d)
		d.PIDs = readPIDs(c, mig, uuid)
		out = append(out, d)
	}
	return out
}
