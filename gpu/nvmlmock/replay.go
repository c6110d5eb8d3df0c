// SPDX-License-Identifier: Apache-2.0

//go:build cgo && !nogpu

package nvmlmock

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
)

// Dump is what test/gpu/nvmldump recorded from a real driver: per device
// UUID, every NVML call the backend makes with its return code and value,
// and the GPM metric values over one second.
type Dump struct {
	Driver string                     `json:"driver"`
	Raw    map[string][]RecordedCall  `json:"raw"`
	GPM    map[string]json.RawMessage `json:"gpm"`
	byCall map[string]map[string]RecordedCall
}

// RecordedCall is one call of the dump.
type RecordedCall struct {
	Call   string          `json:"call"`
	Return string          `json:"return"`
	Value  json.RawMessage `json:"value"`
}

// GPMValues are the GPM metrics of one device, by metric id.
type GPMValues struct {
	Values map[string]float64 `json:"values"`
}

// LoadDump reads a dump file.
func LoadDump(path string) (*Dump, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	d := &Dump{}
	if err := json.Unmarshal(b, d); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	d.byCall = map[string]map[string]RecordedCall{}
	for uuid, calls := range d.Raw {
		d.byCall[uuid] = map[string]RecordedCall{}
		for _, c := range calls {
			d.byCall[uuid][c.Call] = c
		}
	}
	return d, nil
}

// returns maps the driver's own nvmlErrorString texts, as recorded, back
// to return codes (the texts come from libnvidia-ml, which tests lack).
var returns = map[string]nvml.Return{
	"Success":                   nvml.SUCCESS,
	"Not Supported":             nvml.ERROR_NOT_SUPPORTED,
	"Not Found":                 nvml.ERROR_NOT_FOUND,
	"Insufficient Permissions":  nvml.ERROR_NO_PERMISSION,
	"Invalid Argument":          nvml.ERROR_INVALID_ARGUMENT,
	"Argument version mismatch": nvml.ERROR_ARGUMENT_VERSION_MISMATCH,
	"GPU is lost":               nvml.ERROR_GPU_IS_LOST,
	"Function Not Found":        nvml.ERROR_FUNCTION_NOT_FOUND,
	"Unknown Error":             nvml.ERROR_UNKNOWN,
}

// Replay builds a go-nvml mock that answers every call the backend makes
// as the recorded driver did. GPM samples replay the recorded metric
// values whatever the interval.
// Tests may replace single functions of the returned mock.
func (d *Dump) Replay() *mock.Interface {
	var devs []nvml.Device
	for uuid := range d.Raw {
		devs = append(devs, d.device(uuid))
	}
	gpm := map[nvml.Device]GPMValues{}
	for i, dev := range devs {
		uuid, _ := dev.GetUUID()
		var g GPMValues
		if raw, ok := d.GPM[uuid]; ok {
			_ = json.Unmarshal(raw, &g) // a device without GPM recorded a string
		}
		gpm[devs[i]] = g
	}
	lib := &mock.Interface{
		InitFunc:                   func() nvml.Return { return nvml.SUCCESS },
		ShutdownFunc:               func() nvml.Return { return nvml.SUCCESS },
		DeviceGetCountFunc:         func() (int, nvml.Return) { return len(devs), nvml.SUCCESS },
		DeviceGetHandleByIndexFunc: func(i int) (nvml.Device, nvml.Return) { return devs[i], nvml.SUCCESS },
		DeviceGetHandleByUUIDFunc: func(u string) (nvml.Device, nvml.Return) {
			for _, dev := range devs {
				if x, _ := dev.GetUUID(); x == u {
					return dev, nvml.SUCCESS
				}
			}
			return nil, nvml.ERROR_NOT_FOUND
		},
		EventSetCreateFunc: func() (nvml.EventSet, nvml.Return) {
			return &mock.EventSet{
				WaitFunc: func(uint32) (nvml.EventData, nvml.Return) { return nvml.EventData{}, nvml.ERROR_TIMEOUT },
				FreeFunc: func() nvml.Return { return nvml.SUCCESS },
			}, nvml.SUCCESS
		},
		GpmSampleAllocFunc: func() (nvml.GpmSample, nvml.Return) {
			s := &mock.GpmSample{}
			s.FreeFunc = func() nvml.Return { return nvml.SUCCESS }
			return s, nvml.SUCCESS
		},
		GpmSampleGetFunc: func(nvml.Device, nvml.GpmSample) nvml.Return { return nvml.SUCCESS },
	}
	lib.ExtensionsFunc = func() nvml.ExtendedInterface {
		return &mock.ExtendedInterface{LookupSymbolFunc: func(string) error { return nil }}
	}
	lib.GpmQueryDeviceSupportFunc = func(dev nvml.Device) (nvml.GpmSupport, nvml.Return) {
		var s nvml.GpmSupport
		ret := d.value(dev, "GpmQueryDeviceSupport", &s)
		return s, ret
	}
	// The backend asks for one device's metrics at a time; which device is
	// the one whose recorded values hold every id asked for.
	lib.GpmMetricsGetFunc = func(mg *nvml.GpmMetricsGetType) nvml.Return {
		var vals map[string]float64
		for _, g := range gpm {
			if g.Values != nil {
				vals = g.Values
			}
		}
		for i := 0; i < int(mg.NumMetrics); i++ {
			v, ok := vals[strconv.Itoa(int(mg.Metrics[i].MetricId))]
			if !ok {
				mg.Metrics[i].NvmlReturn = uint32(nvml.ERROR_NOT_SUPPORTED)
				continue
			}
			mg.Metrics[i].NvmlReturn, mg.Metrics[i].Value = uint32(nvml.SUCCESS), v
		}
		return nvml.SUCCESS
	}
	return lib
}

// value decodes the recorded value of call on dev into out.
func (d *Dump) value(dev nvml.Device, call string, out any) nvml.Return {
	uuid, _ := dev.GetUUID()
	c, ok := d.byCall[uuid][call]
	if !ok {
		return nvml.ERROR_NOT_SUPPORTED
	}
	r, ok := returns[c.Return]
	if !ok {
		r = nvml.ERROR_UNKNOWN
	}
	if r == nvml.SUCCESS && len(c.Value) > 0 {
		if err := json.Unmarshal(c.Value, out); err != nil {
			return nvml.ERROR_UNKNOWN
		}
	}
	return r
}

func (d *Dump) device(uuid string) *mock.Device {
	dev := &mock.Device{}
	get := func(call string, out any) nvml.Return { return d.value(dev, call, out) }
	dev.GetUUIDFunc = func() (string, nvml.Return) { return uuid, nvml.SUCCESS }
	dev.GetNameFunc = func() (s string, r nvml.Return) { r = get("GetName", &s); return }
	dev.GetMinorNumberFunc = func() (n int, r nvml.Return) { r = get("GetMinorNumber", &n); return }
	dev.GetMigModeFunc = func() (int, int, nvml.Return) {
		var m [2]int
		r := get("GetMigMode", &m)
		return m[0], m[1], r
	}
	dev.GetMemoryInfoFunc = func() (m nvml.Memory, r nvml.Return) { r = get("GetMemoryInfo", &m); return }
	dev.GetMemoryInfo_v2Func = func() (m nvml.Memory_v2, r nvml.Return) { r = get("GetMemoryInfo_v2", &m); return }
	dev.GetUtilizationRatesFunc = func() (u nvml.Utilization, r nvml.Return) { r = get("GetUtilizationRates", &u); return }
	dev.GetPowerUsageFunc = func() (p uint32, r nvml.Return) { r = get("GetPowerUsage", &p); return }
	dev.GetTotalEnergyConsumptionFunc = func() (e uint64, r nvml.Return) { r = get("GetTotalEnergyConsumption", &e); return }
	dev.GetTemperatureFunc = func(nvml.TemperatureSensors) (t uint32, r nvml.Return) { r = get("GetTemperature", &t); return }
	dev.GetClockInfoFunc = func(nvml.ClockType) (c uint32, r nvml.Return) { r = get("GetClockInfo(SM)", &c); return }
	dev.GetTotalEccErrorsFunc = func(t nvml.MemoryErrorType, _ nvml.EccCounterType) (n uint64, r nvml.Return) {
		if t == nvml.MEMORY_ERROR_TYPE_CORRECTED {
			r = get("GetTotalEccErrors(corrected)", &n)
		} else {
			r = get("GetTotalEccErrors(uncorrected)", &n)
		}
		return
	}
	dev.GetPcieThroughputFunc = func(c nvml.PcieUtilCounter) (v uint32, r nvml.Return) {
		if c == nvml.PCIE_UTIL_TX_BYTES {
			r = get("GetPcieThroughput(tx)", &v)
		} else {
			r = get("GetPcieThroughput(rx)", &v)
		}
		return
	}
	dev.GetComputeRunningProcessesFunc = func() (p []nvml.ProcessInfo, r nvml.Return) {
		r = get("GetComputeRunningProcesses", &p)
		return
	}
	dev.GetMaxMigDeviceCountFunc = func() (n int, r nvml.Return) { r = get("GetMaxMigDeviceCount", &n); return }
	dev.GetSupportedEventTypesFunc = func() (e uint64, r nvml.Return) { r = get("GetSupportedEventTypes", &e); return }
	dev.RegisterEventsFunc = func(uint64, nvml.EventSet) nvml.Return { return nvml.SUCCESS }
	return dev
}
