// SPDX-License-Identifier: Apache-2.0

//go:build cgo && !nogpu

// Command nvmldump records what a real NVIDIA driver answers, for fixtures:
// every NVML call the gpu backend makes on each device with its return code
// and value, and the backend's own Snapshot (the fake backend's JSON
// format). test/gpu/run.sh runs it on a GPU machine.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"sort"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/jobscope/jobscope/gpu"
)

type call struct {
	Call   string  `json:"call"`
	Return string  `json:"return"`
	Value  any     `json:"value,omitempty"`
	Micros float64 `json:"median_us"` // median of 9 calls: what one call costs a scrape
}

type probe struct {
	name string
	fn   func() (any, nvml.Return)
}

func deviceProbes(lib nvml.Interface, dev nvml.Device) []probe {
	two := func(a, b any, r nvml.Return) (any, nvml.Return) { return [2]any{a, b}, r }
	return []probe{
		{"GetUUID", func() (any, nvml.Return) { return dev.GetUUID() }},
		{"GetName", func() (any, nvml.Return) { return dev.GetName() }},
		{"GetMinorNumber", func() (any, nvml.Return) { return dev.GetMinorNumber() }},
		{"GetMigMode", func() (any, nvml.Return) { return two(dev.GetMigMode()) }},
		{"GetMemoryInfo", func() (any, nvml.Return) { return dev.GetMemoryInfo() }},
		{"GetMemoryInfo_v2", func() (any, nvml.Return) { return dev.GetMemoryInfo_v2() }},
		{"GetUtilizationRates", func() (any, nvml.Return) { return dev.GetUtilizationRates() }},
		{"GetPowerUsage", func() (any, nvml.Return) { return dev.GetPowerUsage() }},
		{"GetTotalEnergyConsumption", func() (any, nvml.Return) { return dev.GetTotalEnergyConsumption() }},
		{"GetTemperature", func() (any, nvml.Return) { return dev.GetTemperature(nvml.TEMPERATURE_GPU) }},
		{"GetClockInfo(SM)", func() (any, nvml.Return) { return dev.GetClockInfo(nvml.CLOCK_SM) }},
		{"GetTotalEccErrors(corrected)", func() (any, nvml.Return) {
			return dev.GetTotalEccErrors(nvml.MEMORY_ERROR_TYPE_CORRECTED, nvml.VOLATILE_ECC)
		}},
		{"GetTotalEccErrors(uncorrected)", func() (any, nvml.Return) {
			return dev.GetTotalEccErrors(nvml.MEMORY_ERROR_TYPE_UNCORRECTED, nvml.VOLATILE_ECC)
		}},
		{"GetPcieThroughput(tx)", func() (any, nvml.Return) { return dev.GetPcieThroughput(nvml.PCIE_UTIL_TX_BYTES) }},
		{"GetPcieThroughput(rx)", func() (any, nvml.Return) { return dev.GetPcieThroughput(nvml.PCIE_UTIL_RX_BYTES) }},
		{"GetComputeRunningProcesses", func() (any, nvml.Return) { return dev.GetComputeRunningProcesses() }},
		{"GetMaxMigDeviceCount", func() (any, nvml.Return) { return dev.GetMaxMigDeviceCount() }},
		{"GpmQueryDeviceSupport", func() (any, nvml.Return) { return lib.GpmQueryDeviceSupport(dev) }},
		{"GetSupportedEventTypes", func() (any, nvml.Return) { return dev.GetSupportedEventTypes() }},
		{"GetPciInfo", func() (any, nvml.Return) {
			p, r := dev.GetPciInfo()
			return cstr(p.BusIdLegacy[:]), r
		}},
	}
}

func rawCalls(lib nvml.Interface) map[string][]call {
	byDev := map[string][]call{}
	n, ret := lib.DeviceGetCount()
	if ret != nvml.SUCCESS {
		return byDev
	}
	for i := 0; i < n; i++ {
		dev, ret := lib.DeviceGetHandleByIndex(i)
		if ret != nvml.SUCCESS {
			continue
		}
		uuid, _ := dev.GetUUID()
		var out []call
		for _, p := range deviceProbes(lib, dev) {
			var took []time.Duration
			var v any
			var r nvml.Return
			for k := 0; k < 9; k++ {
				t0 := time.Now()
				v, r = p.fn()
				took = append(took, time.Since(t0))
			}
			sort.Slice(took, func(a, b int) bool { return took[a] < took[b] })
			c := call{Call: p.name, Return: nvml.ErrorString(r), Micros: float64(took[4].Microseconds())}
			if r == nvml.SUCCESS {
				c.Value = v
			}
			out = append(out, c)
		}
		byDev[uuid] = out
	}
	return byDev
}

// gpmValues records every GPM metric over one second, per device, with
// NVML's return code for each (absent metrics say why).
func gpmValues(lib nvml.Interface) map[string]any {
	out := map[string]any{}
	n, _ := lib.DeviceGetCount()
	for i := 0; i < n; i++ {
		dev, ret := lib.DeviceGetHandleByIndex(i)
		if ret != nvml.SUCCESS {
			continue
		}
		uuid, _ := dev.GetUUID()
		s1, r1 := lib.GpmSampleAlloc()
		s2, r2 := lib.GpmSampleAlloc()
		if r1 != nvml.SUCCESS || r2 != nvml.SUCCESS {
			out[uuid] = "GpmSampleAlloc: " + nvml.ErrorString(r1) + " " + nvml.ErrorString(r2)
			continue
		}
		g1 := lib.GpmSampleGet(dev, s1)
		time.Sleep(time.Second)
		g2 := lib.GpmSampleGet(dev, s2)
		mg := &nvml.GpmMetricsGetType{NumMetrics: 0, Sample1: s1, Sample2: s2}
		// The ids go-nvml v0.13.4 defines up to 120 (NVLink per-link ids after).
		ids := []nvml.GpmMetricId{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 20, 21, 30, 31, 32, 33, 34, 35, 36, 37, 40, 41, 42, 43, 44, 45, 46, 47, 50, 51, 60, 61, 62, 63, 64, 65, 66, 67, 68, 69, 70, 71, 72, 73, 74, 75, 76, 77, 78, 79, 80, 81, 82, 83, 84, 85, 86, 87, 88, 89, 90, 91, 92, 93, 94, 95, 96, 97, 100, 101, 102, 103, 104, 105, 106, 107, 108, 109, 110, 111, 112, 113, 114, 115, 116, 117, 118, 119, 120}
		for k, id := range ids {
			mg.Metrics[k].MetricId = uint32(id)
		}
		mg.NumMetrics = uint32(len(ids))
		r := lib.GpmMetricsGet(mg)
		vals := map[string]any{}
		for k := range ids {
			m := mg.Metrics[k]
			if nvml.Return(m.NvmlReturn) == nvml.SUCCESS {
				vals[fmt.Sprint(m.MetricId)] = m.Value
			}
		}
		out[uuid] = map[string]any{"sample_get": []string{nvml.ErrorString(g1), nvml.ErrorString(g2)}, "metrics_get": nvml.ErrorString(r), "values": vals}
		_ = s1.Free() // a dump tool: nothing to do if freeing fails
		_ = s2.Free()
	}
	return out
}

func cstr[T ~int8 | ~uint8](b []T) string {
	out := make([]byte, 0, len(b))
	for _, c := range b {
		if c == 0 {
			break
		}
		out = append(out, byte(c))
	}
	return string(out)
}

func main() {
	outFile := flag.String("o", "nvml-dump.json", "output file")
	flag.Parse()
	lib := nvml.New()
	if ret := lib.Init(); ret != nvml.SUCCESS {
		fmt.Fprintln(os.Stderr, "nvml init:", nvml.ErrorString(ret))
		os.Exit(1)
	}
	drv, _ := lib.SystemGetDriverVersion()
	nvmlVer, _ := lib.SystemGetNVMLVersion()
	cudaVer, _ := lib.SystemGetCudaDriverVersion_v2()
	raw := rawCalls(lib)
	gpm := gpmValues(lib)
	_ = lib.Shutdown() // the backend below initialises NVML again

	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	b, err := gpu.NewNVML(nvml.New(), log)
	if err != nil {
		fmt.Fprintln(os.Stderr, "backend:", err)
		os.Exit(1)
	}
	ctx := context.Background()
	first, err1 := b.Snapshot(ctx) // GPM needs a previous sample
	time.Sleep(time.Second)
	second, err2 := b.Snapshot(ctx)
	var took []float64
	for range 9 {
		t0 := time.Now()
		_, _ = b.Snapshot(ctx) // timed only
		took = append(took, float64(time.Since(t0).Microseconds()))
		time.Sleep(100 * time.Millisecond)
	}
	b.Close()
	sort.Float64s(took)
	res := map[string]any{
		"driver": drv, "nvml": nvmlVer, "cuda_driver": cudaVer,
		"raw": raw, "gpm": gpm, "snapshot_first": first, "snapshot": second,
		"snapshot_median_us": took[4], "errors": fmt.Sprint(err1, " ", err2),
	}
	if second != nil {
		var errs []string
		for _, e := range second.Errors {
			errs = append(errs, e.Error())
		}
		res["snapshot_call_errors"] = errs
	}
	if err := save(*outFile, res); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func save(path string, res map[string]any) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(f)
	enc.SetIndent("", "  ")
	if err := enc.Encode(res); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
