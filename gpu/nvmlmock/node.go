// SPDX-License-Identifier: Apache-2.0

//go:build cgo && !nogpu

// Package nvmlmock builds a deterministic DGX A100 from go-nvml's mock
// (fixed UUIDs, telemetry, processes, MIG on the last GPU, Xid events) for
// the NVML backend's and the gpu collector's tests.
package nvmlmock

import (
	"fmt"
	"sync"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxa100"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"
)

// UUID is the fixed UUID of GPU i.
func UUID(i int) string { return fmt.Sprintf("GPU-00000000-0000-4000-8000-%012d", i) }

// MIGUUID is the fixed UUID of MIG instance j on the last GPU.
func MIGUUID(j int) string { return fmt.Sprintf("MIG-00000000-0000-4000-8000-0000000007%02d", j) }

// Node is a mock DGX A100: GPU 7 is MIG-enabled with two 3g.20gb
// instances; PIDs lists the compute processes per GPU index (and per MIG
// instance as 70+j).
type Node struct {
	*server.Server
	PIDs map[int][]uint32
	// Missing lists NVML symbols this node's "driver" lacks (an old driver).
	Missing map[string]bool

	mu        sync.Mutex
	xid       []nvml.EventData
	Shutdowns int
	SetFreed  bool
}

// New builds the node.
func New() *Node {
	n := &Node{Server: dgxa100.New(), PIDs: map[int][]uint32{}, Missing: map[string]bool{}}
	n.LookupSymbolFunc = func(s string) error {
		if n.Missing[s] {
			return fmt.Errorf("undefined symbol: %s", s)
		}
		return nil
	}
	for i, d := range n.Devices {
		dev := d.(*server.Device)
		dev.UUID = UUID(i)
		dev.MemoryInfo.Used = uint64(i) << 30
		setTelemetry(dev, i, n)
		setMemoryV2(dev)
	}
	last := n.Devices[7].(*server.Device)
	last.MigMode = nvml.DEVICE_MIG_ENABLE
	// A MIG-enabled GPU reports no utilisation of its own.
	last.GetUtilizationRatesFunc = func() (nvml.Utilization, nvml.Return) { return nvml.Utilization{}, nvml.ERROR_NOT_SUPPORTED }
	migs := []nvml.Device{n.migDevice(0, 1), n.migDevice(1, 2)}
	last.GetMaxMigDeviceCountFunc = func() (int, nvml.Return) { return 7, nvml.SUCCESS }
	last.GetMigDeviceHandleByIndexFunc = func(j int) (nvml.Device, nvml.Return) {
		if j < len(migs) {
			return migs[j], nvml.SUCCESS
		}
		return nil, nvml.ERROR_NOT_FOUND
	}

	n.GpmQueryDeviceSupportFunc = func(nvml.Device) (nvml.GpmSupport, nvml.Return) {
		return nvml.GpmSupport{}, nvml.SUCCESS // Ampere: no GPM
	}
	n.ShutdownFunc = func() nvml.Return {
		n.mu.Lock()
		n.Shutdowns++
		n.mu.Unlock()
		return nvml.SUCCESS
	}
	n.EventSetCreateFunc = func() (nvml.EventSet, nvml.Return) {
		return &mock.EventSet{
			WaitFunc: n.wait,
			FreeFunc: func() nvml.Return {
				n.mu.Lock()
				n.SetFreed = true
				n.mu.Unlock()
				return nvml.SUCCESS
			},
		}, nvml.SUCCESS
	}
	return n
}

// Xid queues an Xid event on GPU i (gi < 0: not blamed on a MIG instance).
func (n *Node) Xid(i int, xid uint64, gi int) {
	ev := nvml.EventData{Device: n.Devices[i], EventType: nvml.EventTypeXidCriticalError, EventData: xid, GpuInstanceId: 0xFFFFFFFF}
	if gi >= 0 {
		ev.GpuInstanceId = uint32(gi)
	}
	n.mu.Lock()
	n.xid = append(n.xid, ev)
	n.mu.Unlock()
}

// wait stands in for nvmlEventSetWait: an event if one is queued, else a
// short pause and a timeout.
func (n *Node) wait(uint32) (nvml.EventData, nvml.Return) {
	n.mu.Lock()
	if len(n.xid) > 0 {
		ev := n.xid[0]
		n.xid = n.xid[1:]
		n.mu.Unlock()
		return ev, nvml.SUCCESS
	}
	n.mu.Unlock()
	time.Sleep(2 * time.Millisecond)
	return nvml.EventData{}, nvml.ERROR_TIMEOUT
}

// Pending reports how many queued Xid events the poller has not taken.
func (n *Node) Pending() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return len(n.xid)
}

func setTelemetry(dev *server.Device, i int, n *Node) {
	ok := nvml.SUCCESS
	dev.GetUtilizationRatesFunc = func() (nvml.Utilization, nvml.Return) {
		return nvml.Utilization{Gpu: uint32(10 * i), Memory: uint32(5 * i)}, ok
	}
	dev.GetPowerUsageFunc = func() (uint32, nvml.Return) { return uint32(60000 + 1000*i), ok }
	dev.GetTotalEnergyConsumptionFunc = func() (uint64, nvml.Return) { return uint64(1000000 * (i + 1)), ok }
	dev.GetTemperatureFunc = func(nvml.TemperatureSensors) (uint32, nvml.Return) { return uint32(30 + i), ok }
	dev.GetClockInfoFunc = func(nvml.ClockType) (uint32, nvml.Return) { return 1410, ok }
	dev.GetTotalEccErrorsFunc = func(t nvml.MemoryErrorType, _ nvml.EccCounterType) (uint64, nvml.Return) {
		if t == nvml.MEMORY_ERROR_TYPE_CORRECTED {
			return uint64(i), ok
		}
		return 0, ok
	}
	dev.GetPcieThroughputFunc = func(c nvml.PcieUtilCounter) (uint32, nvml.Return) { return uint32(100 + int(c)), ok }
	dev.GetComputeRunningProcessesFunc = func() ([]nvml.ProcessInfo, nvml.Return) { return procs(n.PIDs[i]), ok }
	dev.GetSupportedEventTypesFunc = func() (uint64, nvml.Return) { return nvml.EventTypeXidCriticalError, ok }
	dev.RegisterEventsFunc = func(uint64, nvml.EventSet) nvml.Return { return ok }
}

// Reserved is the device memory the mock driver keeps for itself, the
// amount a real H100 with driver 580 reported (testdata/gpu/h100).
const Reserved = 480 << 20

// setMemoryV2 answers nvmlDeviceGetMemoryInfo_v2 as a real driver does: the
// total includes the driver's reservation, used and free do not. The mock's
// v1 MemoryInfo is taken as what processes see.
func setMemoryV2(dev *server.Device) {
	dev.GetMemoryInfo_v2Func = func() (nvml.Memory_v2, nvml.Return) {
		m := dev.MemoryInfo
		return nvml.Memory_v2{Total: m.Total + Reserved, Reserved: Reserved, Used: m.Used, Free: m.Total - m.Used}, nvml.SUCCESS
	}
}

func (n *Node) migDevice(j, gi int) nvml.Device {
	return &mock.Device{
		GetUUIDFunc:              func() (string, nvml.Return) { return MIGUUID(j), nvml.SUCCESS },
		GetNameFunc:              func() (string, nvml.Return) { return "Mock NVIDIA A100-SXM4-40GB MIG 3g.20gb", nvml.SUCCESS },
		GetGpuInstanceIdFunc:     func() (int, nvml.Return) { return gi, nvml.SUCCESS },
		GetComputeInstanceIdFunc: func() (int, nvml.Return) { return 0, nvml.SUCCESS },
		GetMemoryInfoFunc: func() (nvml.Memory, nvml.Return) {
			return nvml.Memory{Total: 20 << 30, Used: uint64(j+1) << 28}, nvml.SUCCESS
		},
		// What a real MIG instance answers to the v2 call is unverified (no
		// MIG on the lent H100); the backend falls back to the first call.
		GetMemoryInfo_v2Func:           func() (nvml.Memory_v2, nvml.Return) { return nvml.Memory_v2{}, nvml.ERROR_NOT_SUPPORTED },
		GetComputeRunningProcessesFunc: func() ([]nvml.ProcessInfo, nvml.Return) { return procs(n.PIDs[70+j]), nvml.SUCCESS },
	}
}

func procs(pids []uint32) []nvml.ProcessInfo {
	out := make([]nvml.ProcessInfo, 0, len(pids))
	for _, p := range pids {
		out = append(out, nvml.ProcessInfo{Pid: p, UsedGpuMemory: 1 << 30})
	}
	return out
}
