// SPDX-License-Identifier: Apache-2.0

//go:build cgo && !nogpu

package gpu_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"

	"github.com/jobscope/jobscope/gpu"
	"github.com/jobscope/jobscope/gpu/nvmlmock"
)

func open(t *testing.T, lib nvml.Interface) gpu.Backend {
	t.Helper()
	b, err := gpu.NewNVML(lib, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

func snapshot(t *testing.T, b gpu.Backend) *gpu.Snapshot {
	t.Helper()
	s, err := b.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func find(s *gpu.Snapshot, uuid string) *gpu.Device {
	for i := range s.Devices {
		if s.Devices[i].UUID == uuid {
			return &s.Devices[i]
		}
	}
	return nil
}

func TestNVMLSnapshot(t *testing.T) {
	node := nvmlmock.New()
	node.PIDs[2] = []uint32{700, 701}
	node.PIDs[71] = []uint32{800}
	s := snapshot(t, open(t, node))
	if len(s.Errors) != 0 {
		t.Fatalf("errors: %v", s.Errors)
	}
	if len(s.Devices) != 10 {
		t.Fatalf("%d devices, want 8 GPUs and 2 MIG instances", len(s.Devices))
	}
	d := find(s, nvmlmock.UUID(2))
	want := map[gpu.Field]float64{
		gpu.MemoryTotalBytes: 42949672960, gpu.MemoryUsedBytes: 2 << 30,
		gpu.UtilizationRatio: 0.2, gpu.MemoryUtilRatio: 0.1, gpu.PowerWatts: 62, gpu.EnergyJoules: 3000,
		gpu.TemperatureCelsius: 32, gpu.SMClockHertz: 1410e6, gpu.ECCCorrected: 2, gpu.ECCUncorrected: 0,
		gpu.PCIeTXBytesPerSecond: 100 * 1024, gpu.PCIeRXBytesPerSecond: 101 * 1024,
	}
	for f, v := range want {
		if got, ok := d.Values[f]; !ok || got != v {
			t.Errorf("%s = %v (present %v), want %v", f, got, ok, v)
		}
	}
	if len(d.Values) != len(want) {
		t.Errorf("values %v: want exactly %d (A100 has no GPM)", d.Values, len(want))
	}
	if d.Index != 2 || d.Minor != 2 || d.Model != "Mock NVIDIA A100-SXM4-40GB" || len(d.PIDs) != 2 || d.PIDs[0] != 700 {
		t.Errorf("device 2: %+v", d)
	}

	parent := find(s, nvmlmock.UUID(7))
	if !parent.MIGEnabled || len(parent.PIDs) != 0 {
		t.Errorf("GPU 7: %+v", parent)
	}
	if _, ok := parent.Values[gpu.UtilizationRatio]; ok {
		t.Error("MIG parent: unsupported utilisation reported")
	}
	mig := find(s, nvmlmock.MIGUUID(1))
	if mig == nil || mig.ParentUUID != nvmlmock.UUID(7) || mig.GPUInstanceID != 2 || mig.Index != 7 ||
		mig.Values[gpu.MemoryUsedBytes] != 2<<28 || len(mig.PIDs) != 1 || mig.PIDs[0] != 800 {
		t.Errorf("MIG instance 1: %+v", mig)
	}
}

// One failing call leaves one value out and names the call; the device and
// the other devices stay.
func TestNVMLSingleCallErrors(t *testing.T) {
	node := nvmlmock.New()
	node.Devices[1].(*server.Device).GetPowerUsageFunc = func() (uint32, nvml.Return) { return 0, nvml.ERROR_UNKNOWN }
	node.Devices[3].(*server.Device).GetUUIDFunc = func() (string, nvml.Return) { return "", nvml.ERROR_GPU_IS_LOST }
	node.Devices[4].(*server.Device).GetTemperatureFunc = func(nvml.TemperatureSensors) (uint32, nvml.Return) {
		return 0, nvml.ERROR_NOT_SUPPORTED
	}
	get := node.DeviceGetHandleByIndexFunc
	node.DeviceGetHandleByIndexFunc = func(i int) (nvml.Device, nvml.Return) {
		if i == 5 {
			return nil, nvml.ERROR_UNKNOWN
		}
		return get(i)
	}
	s := snapshot(t, open(t, node))
	if len(s.Devices) != 9 { // 8 GPUs - 1 unreadable + 2 MIG instances, GPU 3 reported lost
		t.Errorf("%d devices, want 9", len(s.Devices))
	}
	lost := 0
	for _, d := range s.Devices {
		if d.Lost {
			lost++
			if d.Index != 3 || d.UUID != "" {
				t.Errorf("lost before its first reading: %+v", d)
			}
		}
	}
	if lost != 1 {
		t.Errorf("%d lost devices, want GPU 3", lost)
	}
	calls := map[string]bool{}
	for _, e := range s.Errors {
		calls[e.Call] = true
	}
	for _, c := range []string{"GetPowerUsage", "GetUUID", "DeviceGetHandleByIndex"} {
		if !calls[c] {
			t.Errorf("no error listed for %s: %v", c, s.Errors)
		}
	}
	if len(s.Errors) != 3 {
		t.Errorf("errors %v: NOT_SUPPORTED must be silent", s.Errors)
	}
	d1 := find(s, nvmlmock.UUID(1))
	if _, ok := d1.Values[gpu.PowerWatts]; ok {
		t.Error("failed power reading reported")
	}
	if d1.Values[gpu.TemperatureCelsius] != 31 {
		t.Error("other values of the device lost")
	}
	if _, ok := find(s, nvmlmock.UUID(4)).Values[gpu.TemperatureCelsius]; ok {
		t.Error("unsupported temperature reported")
	}
}

// Without a driver only Init is called: go-nvml's mock panics on any other
// method, as the real library would abort the process.
func TestNVMLInitFails(t *testing.T) {
	for _, ret := range []nvml.Return{nvml.ERROR_LIBRARY_NOT_FOUND, nvml.ERROR_DRIVER_NOT_LOADED, nvml.ERROR_NO_PERMISSION} {
		lib := &mock.Interface{InitFunc: func() nvml.Return { return ret }}
		_, err := gpu.NewNVML(lib, nil)
		if !errors.Is(err, gpu.ErrNoDevice) {
			t.Errorf("%v: err %v, want ErrNoDevice", ret, err)
		}
		if len(lib.InitCalls()) != 1 {
			t.Errorf("%v: Init called %d times", ret, len(lib.InitCalls()))
		}
	}
}

func TestNVMLNoDevices(t *testing.T) {
	shut := 0
	lib := &mock.Interface{
		InitFunc:           func() nvml.Return { return nvml.SUCCESS },
		DeviceGetCountFunc: func() (int, nvml.Return) { return 0, nvml.SUCCESS },
		ShutdownFunc:       func() nvml.Return { shut++; return nvml.SUCCESS },
	}
	if _, err := gpu.NewNVML(lib, nil); !errors.Is(err, gpu.ErrNoDevice) || shut != 1 {
		t.Errorf("err %v, shutdowns %d", err, shut)
	}
}

// The real library on a machine without the NVIDIA driver.
func TestNVMLRealLibraryAbsent(t *testing.T) {
	b, err := gpu.NewNVML(nvml.New(), nil)
	if err == nil {
		b.Close()
		t.Skip("an NVIDIA driver is installed here: driver absence cannot be tested")
	}
	if !errors.Is(err, gpu.ErrNoDevice) {
		t.Fatalf("err %v, want ErrNoDevice", err)
	}
	_, err = gpu.Open(gpu.Config{Backend: "auto"})
	if !errors.Is(err, gpu.ErrNoDevice) {
		t.Fatalf("auto: err %v, want ErrNoDevice", err)
	}
}

func TestNVMLXid(t *testing.T) {
	node := nvmlmock.New()
	b := open(t, node)
	node.Xid(3, 79, -1)
	node.Xid(7, 94, 2)
	var got []gpu.XidEvent
	// The poller runs on its own; wait (bounded) until it took both.
	for i := 0; i < 1000 && len(got) < 2; i++ {
		got = append(got, snapshot(t, b).Xid...)
		if len(got) < 2 {
			time.Sleep(5 * time.Millisecond)
		}
	}
	if len(got) != 2 || got[0] != (gpu.XidEvent{UUID: nvmlmock.UUID(3), GPUInstanceID: -1, Xid: 79}) ||
		got[1] != (gpu.XidEvent{UUID: nvmlmock.UUID(7), GPUInstanceID: 2, Xid: 94}) {
		t.Fatalf("events %+v", got)
	}
	if len(snapshot(t, b).Xid) != 0 {
		t.Error("events handed out twice")
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if !node.SetFreed || node.Shutdowns != 1 {
		t.Errorf("close: set freed %v, shutdowns %d", node.SetFreed, node.Shutdowns)
	}
}

func TestNVMLGPM(t *testing.T) {
	node := nvmlmock.New()
	node.GpmQueryDeviceSupportFunc = func(d nvml.Device) (nvml.GpmSupport, nvml.Return) {
		return nvml.GpmSupport{IsSupportedDevice: boolToU32(d == node.Devices[0])}, nvml.SUCCESS
	}
	allocs, gets := 0, 0
	node.GpmSampleAllocFunc = func() (nvml.GpmSample, nvml.Return) {
		allocs++
		return &mock.GpmSample{FreeFunc: func() nvml.Return { return nvml.SUCCESS }}, nvml.SUCCESS
	}
	node.GpmSampleGetFunc = func(nvml.Device, nvml.GpmSample) nvml.Return { gets++; return nvml.SUCCESS }
	node.GpmMetricsGetFunc = func(m *nvml.GpmMetricsGetType) nvml.Return {
		if m.Sample1 == m.Sample2 || m.NumMetrics == 0 {
			t.Errorf("GpmMetricsGet with samples %p %p, %d metrics", m.Sample1, m.Sample2, m.NumMetrics)
		}
		for i := 0; i < int(m.NumMetrics); i++ {
			m.Metrics[i].Value = 50
			if nvml.GpmMetricId(m.Metrics[i].MetricId) == nvml.GPM_METRIC_FP64_UTIL {
				m.Metrics[i].NvmlReturn = uint32(nvml.ERROR_NOT_SUPPORTED)
			}
		}
		return nvml.SUCCESS
	}
	b := open(t, node)
	first := find(snapshot(t, b), nvmlmock.UUID(0))
	if _, ok := first.Values[gpu.SMActiveRatio]; ok {
		t.Error("profiling values from a single sample")
	}
	second := find(snapshot(t, b), nvmlmock.UUID(0))
	if second.Values[gpu.SMActiveRatio] != 0.5 || second.Values[gpu.TensorActiveRatio] != 0.5 ||
		second.Values[gpu.NVLinkTXBytesPerSecond] != 50<<20 || second.Values[gpu.PCIeTXBytesPerSecond] != 50<<20 {
		t.Errorf("GPM values %v", second.Values)
	}
	if _, ok := second.Values[gpu.FP64ActiveRatio]; ok {
		t.Error("a metric GPM refused was reported")
	}
	if allocs != 2 || gets != 2 {
		t.Errorf("allocs %d gets %d: want 2 samples for the one GPM device, one read per scrape", allocs, gets)
	}
	if _, ok := find(snapshot(t, b), nvmlmock.UUID(1)).Values[gpu.SMActiveRatio]; ok {
		t.Error("profiling on a device without GPM")
	}
}

func boolToU32(b bool) uint32 {
	if b {
		return 1
	}
	return 0
}

func TestNVMLContextCancelled(t *testing.T) {
	b := open(t, nvmlmock.New())
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := b.Snapshot(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("err %v", err)
	}
}

// A scrape waits for another scrape's NVML read only until its deadline.
func TestNVMLSlowReadDoesNotPileUp(t *testing.T) {
	node := nvmlmock.New()
	release := make(chan struct{})
	entered := make(chan struct{}, 1)
	dev := node.Devices[0].(*server.Device)
	dev.GetPowerUsageFunc = func() (uint32, nvml.Return) {
		select {
		case entered <- struct{}{}:
			<-release // the first read hangs like a GPU falling off the bus
		default:
		}
		return 1000, nvml.SUCCESS
	}
	b := open(t, node)
	done := make(chan error, 1)
	go func() { _, err := b.Snapshot(context.Background()); done <- err }()
	<-entered
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := b.Snapshot(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("second scrape: %v, want its own deadline", err)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// A GPU that falls off the bus (NVML_ERROR_GPU_IS_LOST, Xid 79) is reported
// as lost under the identity it had, and the other GPUs go on.
func TestNVMLGPULost(t *testing.T) {
	node := nvmlmock.New()
	b := open(t, node)
	snapshot(t, b)
	get := node.DeviceGetHandleByIndexFunc
	node.DeviceGetHandleByIndexFunc = func(i int) (nvml.Device, nvml.Return) {
		if i == 3 {
			return nil, nvml.ERROR_GPU_IS_LOST
		}
		return get(i)
	}
	s := snapshot(t, b)
	d := find(s, nvmlmock.UUID(3))
	if d == nil || !d.Lost || d.Index != 3 || len(d.Values) != 0 {
		t.Fatalf("lost GPU 3: %+v", d)
	}
	for i := 0; i < 7; i++ {
		if i == 3 {
			continue
		}
		if o := find(s, nvmlmock.UUID(i)); o == nil || o.Lost || len(o.Values) == 0 {
			t.Errorf("GPU %d after GPU 3 was lost: %+v", i, o)
		}
	}
}
