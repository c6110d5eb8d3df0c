// SPDX-License-Identifier: Apache-2.0

//go:build cgo && !nogpu

package gpu

import "github.com/NVIDIA/go-nvml/pkg/nvml"

// gpmState keeps a device's previous GPM sample: GPM metrics are averages
// between two samples, here the previous scrape and this one.
type gpmState struct {
	supported bool
	prev, cur nvml.GpmSample
	havePrev  bool
}

func (g *gpmState) free() {
	for _, s := range []nvml.GpmSample{g.prev, g.cur} {
		if s != nil {
			_ = s.Free() // a sample that cannot be freed is lost either way
		}
	}
	g.prev, g.cur, g.supported = nil, nil, false
}

// gpmFields are the GPM metrics jobscope reads, with the factor to base
// units (percent to ratio, MiB/s to bytes/s).
var gpmFields = []struct {
	id    nvml.GpmMetricId
	field Field
	scale float64
}{
	{nvml.GPM_METRIC_SM_UTIL, SMActiveRatio, 0.01},
	{nvml.GPM_METRIC_SM_OCCUPANCY, SMOccupancyRatio, 0.01},
	{nvml.GPM_METRIC_ANY_TENSOR_UTIL, TensorActiveRatio, 0.01},
	{nvml.GPM_METRIC_DRAM_BW_UTIL, DRAMActiveRatio, 0.01},
	{nvml.GPM_METRIC_FP64_UTIL, FP64ActiveRatio, 0.01},
	{nvml.GPM_METRIC_FP32_UTIL, FP32ActiveRatio, 0.01},
	{nvml.GPM_METRIC_FP16_UTIL, FP16ActiveRatio, 0.01},
	{nvml.GPM_METRIC_PCIE_TX_PER_SEC, PCIeTXBytesPerSecond, 1 << 20},
	{nvml.GPM_METRIC_PCIE_RX_PER_SEC, PCIeRXBytesPerSecond, 1 << 20},
	{nvml.GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC, NVLinkTXBytesPerSecond, 1 << 20},
	{nvml.GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC, NVLinkRXBytesPerSecond, 1 << 20},
}

// readGPM fills the profiling fields on GPUs with GPM (Hopper and later)
// and reports whether the device has GPM. GPM reads the same counters as
// DCGM profiling without taking the profiling lock that blocks users'
// Nsight sessions. The first scrape of a device only takes a sample.
func (b *nvmlBackend) readGPM(c calls, dev nvml.Device, d *Device) bool {
	if !b.caps.gpm {
		return false
	}
	b.gpmMu.Lock()
	g := b.gpm[d.UUID]
	fresh := g == nil
	if fresh {
		g = &gpmState{}
		b.gpm[d.UUID] = g
	}
	b.gpmMu.Unlock()
	if fresh {
		sup, ret := b.lib.GpmQueryDeviceSupport(dev)
		// NOT_SUPPORTED and an unsupported device (pre-Hopper) are normal;
		// any other answer is listed: go-nvml before v0.13.4 sent a struct
		// version the driver refuses, and GPM went missing without a word.
		if !c.ok("GpmQueryDeviceSupport", d.UUID, ret) || sup.IsSupportedDevice == 0 {
			return false
		}
		prev, r1 := b.lib.GpmSampleAlloc()
		cur, r2 := b.lib.GpmSampleAlloc()
		g.prev, g.cur = prev, cur
		if !c.ok("GpmSampleAlloc", d.UUID, r1) || !c.ok("GpmSampleAlloc", d.UUID, r2) {
			g.free()
			b.gpmMu.Lock()
			delete(b.gpm, d.UUID) // try again next scrape
			b.gpmMu.Unlock()
			return false
		}
		g.supported = true
	}
	if !g.supported {
		return false
	}
	if !c.ok("GpmSampleGet", d.UUID, b.lib.GpmSampleGet(dev, g.cur)) {
		g.havePrev = false
		return true
	}
	if g.havePrev {
		mg := &nvml.GpmMetricsGetType{NumMetrics: uint32(len(gpmFields)), Sample1: g.prev, Sample2: g.cur}
		for i, f := range gpmFields {
			mg.Metrics[i].MetricId = uint32(f.id)
		}
		if c.ok("GpmMetricsGet", d.UUID, b.lib.GpmMetricsGet(mg)) {
			for i, f := range gpmFields {
				if m := mg.Metrics[i]; nvml.Return(m.NvmlReturn) == nvml.SUCCESS {
					d.Values[f.field] = m.Value * f.scale
				}
			}
		}
	}
	g.prev, g.cur, g.havePrev = g.cur, g.prev, true
	return true
}
