package gpu

import (
	"context"
	"slices"
	"sync"

	"github.com/jobscope/jobscope/gpu"
	"github.com/jobscope/jobscope/power"
)

// gpuEnergy hands the power collector the GPU collector's last reading
// (energy counter and holding job per physical GPU) instead of a second
// backend read: a second read would double the NVML calls, shorten the
// GPM sampling interval and take Xid events away from the gpu collector.
// The power ledger works on counter deltas, so a reading one scrape old
// only shifts when energy is counted, not how much.
type gpuEnergy struct {
	mu   sync.Mutex
	devs []power.GPUDevice
}

func (e *gpuEnergy) GPUEnergy(context.Context) ([]power.GPUDevice, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.devs), nil
}

// update keeps the physical GPUs' energy of this scrape. A MIG-enabled
// GPU's energy is the node's: several jobs may share it.
func (e *gpuEnergy) update(devs []gpu.Device, holder func(uuid string) string) {
	out := make([]power.GPUDevice, 0, len(devs))
	for i := range devs {
		d := &devs[i]
		j, ok := d.Values[gpu.EnergyJoules]
		if !ok || d.IsMIG() {
			continue
		}
		g := power.GPUDevice{ID: d.UUID, Joules: j}
		if !d.MIGEnabled {
			g.JobID = holder(d.UUID)
		}
		out = append(out, g)
	}
	e.mu.Lock()
	e.devs = out
	e.mu.Unlock()
}
