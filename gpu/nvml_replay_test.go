// SPDX-License-Identifier: Apache-2.0

//go:build cgo && !nogpu

package gpu_test

import (
	"encoding/json"
	"errors"
	"math"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"

	"github.com/jobscope/jobscope/gpu"
	"github.com/jobscope/jobscope/gpu/nvmlmock"
)

// The dumps under testdata/gpu/h100 were recorded from a real H100 80GB
// HBM3 with driver 580.159.04 (test/gpu/run.sh): idle, and under an FP32
// load. Replaying them checks the backend's units and fallbacks against
// what that driver really answered.

const h100UUID = "GPU-64084850-48a7-7804-8f4c-6744ef2f9e87"

func loadDump(t *testing.T, name string) *nvmlmock.Dump {
	t.Helper()
	d, err := nvmlmock.LoadDump("../testdata/gpu/h100/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// recorded returns a value the driver gave, decoded into out.
func recorded(t *testing.T, d *nvmlmock.Dump, call string, out any) {
	t.Helper()
	for _, c := range d.Raw[h100UUID] {
		if c.Call == call {
			if err := json.Unmarshal(c.Value, out); err != nil {
				t.Fatalf("%s: %v", call, err)
			}
			return
		}
	}
	t.Fatalf("%s not recorded", call)
}

func gpmRecorded(t *testing.T, d *nvmlmock.Dump, id nvml.GpmMetricId) float64 {
	t.Helper()
	var g nvmlmock.GPMValues
	if err := json.Unmarshal(d.GPM[h100UUID], &g); err != nil {
		t.Fatal(err)
	}
	v, ok := g.Values[itoa(int(id))]
	if !ok {
		t.Fatalf("GPM metric %d not recorded", id)
	}
	return v
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

// countPCIe wraps the device's PCIe call to count it: NVML blocks each
// call for its 20 ms sample (21 ms measured per call on the H100).
func countPCIe(lib *mock.Interface) *atomic.Int32 {
	n := &atomic.Int32{}
	dev, _ := lib.DeviceGetHandleByIndex(0)
	md := dev.(*mock.Device)
	orig := md.GetPcieThroughputFunc
	md.GetPcieThroughputFunc = func(c nvml.PcieUtilCounter) (uint32, nvml.Return) {
		n.Add(1)
		return orig(c)
	}
	return n
}

func TestReplayH100UnderLoad(t *testing.T) {
	d := loadDump(t, "nvml-dump-load.json")
	lib := d.Replay()
	pcie := countPCIe(lib)
	b := open(t, lib)
	snapshot(t, b) // GPM's first sample
	s := snapshot(t, b)
	if len(s.Errors) != 0 {
		t.Fatalf("call errors on a healthy H100: %v", s.Errors)
	}
	dev := find(s, h100UUID)
	if dev == nil {
		t.Fatal("H100 missing")
	}
	var mem nvml.Memory_v2
	recorded(t, d, "GetMemoryInfo_v2", &mem)
	var power uint32
	recorded(t, d, "GetPowerUsage", &power)
	var energy uint64
	recorded(t, d, "GetTotalEnergyConsumption", &energy)
	var clock uint32
	recorded(t, d, "GetClockInfo(SM)", &clock)
	want := map[gpu.Field]float64{
		// What processes allocated (a CUDA context here), without the
		// driver's 480 MiB reservation that the first memory call counts.
		gpu.MemoryUsedBytes:  float64(mem.Used),
		gpu.MemoryTotalBytes: float64(mem.Total - mem.Reserved), // cudaMemGetInfo's total
		gpu.UtilizationRatio: 1,
		gpu.PowerWatts:       float64(power) / 1000,
		gpu.EnergyJoules:     float64(energy) / 1000,
		gpu.SMClockHertz:     float64(clock) * 1e6,
		// GPM, in percent and MiB/s.
		gpu.SMActiveRatio:        gpmRecorded(t, d, nvml.GPM_METRIC_SM_UTIL) / 100,
		gpu.SMOccupancyRatio:     gpmRecorded(t, d, nvml.GPM_METRIC_SM_OCCUPANCY) / 100,
		gpu.TensorActiveRatio:    gpmRecorded(t, d, nvml.GPM_METRIC_ANY_TENSOR_UTIL) / 100,
		gpu.FP32ActiveRatio:      gpmRecorded(t, d, nvml.GPM_METRIC_FP32_UTIL) / 100,
		gpu.PCIeTXBytesPerSecond: gpmRecorded(t, d, nvml.GPM_METRIC_PCIE_TX_PER_SEC) * (1 << 20),
		gpu.PCIeRXBytesPerSecond: gpmRecorded(t, d, nvml.GPM_METRIC_PCIE_RX_PER_SEC) * (1 << 20),
	}
	for f, w := range want {
		if got, ok := dev.Values[f]; !ok || !near(got, w) {
			t.Errorf("%s = %v (present %v), want %v", f, got, ok, w)
		}
	}
	if v := dev.Values[gpu.SMActiveRatio]; v < 0.9 {
		t.Errorf("the FP32 load kept every SM busy; sm_active %v", v)
	}
	if n := pcie.Load(); n != 0 {
		t.Errorf("GetPcieThroughput called %d times on a GPM device: 20 ms each for a value GPM already gives", n)
	}
	if len(dev.PIDs) != 1 || dev.PIDs[0] != 623 {
		t.Errorf("PIDs %v, want the recorded compute process 623", dev.PIDs)
	}
}

// An old driver (before r510/r520) lacks the v2 memory call and GPM: the
// backend must not call them (go-nvml binds lazily; a missing symbol ends
// the process) and falls back to the first memory call and NVML's PCIe.
func TestReplayOldDriverFallbacks(t *testing.T) {
	d := loadDump(t, "nvml-dump-load.json")
	lib := d.Replay()
	lib.ExtensionsFunc = func() nvml.ExtendedInterface {
		return &mock.ExtendedInterface{LookupSymbolFunc: func(s string) error {
			if s == "nvmlDeviceGetMemoryInfo_v2" || strings.HasPrefix(s, "nvmlGpm") {
				return errors.New("undefined symbol")
			}
			return nil
		}}
	}
	dev, _ := lib.DeviceGetHandleByIndex(0)
	dev.(*mock.Device).GetMemoryInfo_v2Func = nil // a call would panic the test
	lib.GpmQueryDeviceSupportFunc = nil
	b := open(t, lib)
	snapshot(t, b)
	s := snapshot(t, b)
	got := find(s, h100UUID)
	var mem nvml.Memory
	recorded(t, d, "GetMemoryInfo", &mem)
	var tx uint32
	recorded(t, d, "GetPcieThroughput(tx)", &tx)
	if got.Values[gpu.MemoryUsedBytes] != float64(mem.Used) || got.Values[gpu.MemoryTotalBytes] != float64(mem.Total) {
		t.Errorf("memory %v/%v, want the first call's %d/%d", got.Values[gpu.MemoryUsedBytes], got.Values[gpu.MemoryTotalBytes], mem.Used, mem.Total)
	}
	if got.Values[gpu.PCIeTXBytesPerSecond] != float64(tx)*1024 {
		t.Errorf("PCIe tx %v, want NVML's %d KiB/s", got.Values[gpu.PCIeTXBytesPerSecond], tx)
	}
	if _, ok := got.Values[gpu.SMActiveRatio]; ok {
		t.Error("GPM value without GPM")
	}
}

// go-nvml before v0.13.4 sent a GPM struct version the driver refuses
// ("Argument version mismatch", seen on the H100): GPM then went missing
// in silence. Such an answer is now a listed call error.
func TestReplayGPMRefusalIsReported(t *testing.T) {
	d := loadDump(t, "nvml-dump-idle.json")
	lib := d.Replay()
	lib.GpmQueryDeviceSupportFunc = func(nvml.Device) (nvml.GpmSupport, nvml.Return) {
		return nvml.GpmSupport{}, nvml.ERROR_ARGUMENT_VERSION_MISMATCH
	}
	b := open(t, lib)
	s := snapshot(t, b)
	found := false
	for _, e := range s.Errors {
		found = found || e.Call == "GpmQueryDeviceSupport"
	}
	if !found {
		t.Errorf("GPM refusal not reported: errors %v", s.Errors)
	}
	if _, ok := find(s, h100UUID).Values[gpu.PCIeTXBytesPerSecond]; !ok {
		t.Error("without GPM the PCIe counters come from NVML")
	}
}
