package power

import "context"

// GPUEnergyKey is the collector.Shared key under which a GPU backend that
// implements GPUEnergySource can be found. The GPU collector puts its
// backend there (env.Shared.Get(power.GPUEnergyKey, ...)); without one, the
// per-job GPU part is skipped.
const GPUEnergyKey = "power.gpu-energy"

// GPUDevice is one GPU's energy counter and the job holding the GPU now.
type GPUDevice struct {
	ID     string  // stable device id (UUID)
	JobID  string  // "" when no job holds it
	Joules float64 // monotonic device energy (NVML total energy consumption)
}

// GPUEnergySource lists every GPU of the node with its energy counter (an
// empty list: no GPU data yet, the GPU part is skipped).
// Counters may restart (driver reload): the ledger treats a decrease as a
// restart and skips that interval for the device.
type GPUEnergySource interface {
	GPUEnergy(ctx context.Context) ([]GPUDevice, error)
}
