// SPDX-License-Identifier: Apache-2.0

// Package gpu reads NVIDIA GPUs through one interface with several
// backends (NVML, a DCGM slot, a JSON fake for demos and tests) and maps
// GPUs to Slurm jobs. NVML needs cgo: builds without cgo, or with the
// `nogpu` tag, carry every backend except NVML.
package gpu

import (
	"context"
	"errors"
	"time"
)

// Backend reads the GPUs of this node. Implementations are safe for
// concurrent use: two Prometheus servers may scrape at once.
type Backend interface {
	// Name is the backend's flag value: nvml, dcgm or fake.
	Name() string
	// Snapshot reads every device once. A failed call on one device leaves
	// that value out and is listed in Snapshot.Errors; only a failure that
	// leaves nothing to report returns an error.
	Snapshot(ctx context.Context) (*Snapshot, error)
	// Close releases the library (NVML shutdown, event set, GPM samples).
	Close() error
}

// ErrNoDevice says there is no usable GPU library, driver or device on
// this node: the collector reports it as "no data", logged once.
var ErrNoDevice = errors.New("no NVIDIA GPU library, driver or device")

// ErrNoLibrary says the backend's library is not installed: retrying
// cannot help, unlike an unreachable DCGM host engine.
var ErrNoLibrary = errors.New("library not installed")

// ErrNotBuilt says the backend is not part of this binary.
var ErrNotBuilt = errors.New("backend not built into this binary")

// Snapshot is one reading of every device.
type Snapshot struct {
	Devices []Device
	// Xid lists Xid events that arrived since the previous snapshot (each
	// event is handed out once, to whichever scrape comes first).
	Xid []XidEvent
	// Errors lists single calls that failed (a value is missing); calls a
	// device does not support are not errors.
	Errors []CallError
	// Via names the backend that answered when it is not the configured one
	// (NVML while DCGM's host engine is away); "" otherwise.
	Via string
	// Stale marks a snapshot served again because no backend could be read;
	// Age is how old it is.
	Stale bool
	Age   time.Duration
}

// Device is a physical GPU or a MIG instance.
type Device struct {
	// Index is the NVML index of the GPU (of the parent, for MIG).
	Index int `json:"index"`
	// Minor is N of /dev/nvidiaN (of the parent, for MIG); -1 if unknown.
	Minor int    `json:"minor"`
	UUID  string `json:"uuid"`
	Model string `json:"model"`
	// MIGEnabled marks a parent GPU split into MIG instances: jobs get the
	// instances, never the parent.
	MIGEnabled bool `json:"mig_enabled,omitempty"`
	// ParentUUID is set on MIG instances only.
	ParentUUID        string `json:"parent_uuid,omitempty"`
	GPUInstanceID     int    `json:"gpu_instance_id,omitempty"`
	ComputeInstanceID int    `json:"compute_instance_id,omitempty"`
	// PIDs run compute work on the device (host pid namespace).
	PIDs []int `json:"pids,omitempty"`
	// Values holds what could be read; a missing field was not available.
	Values map[Field]float64 `json:"values,omitempty"`
	// Lost marks a GPU the driver reports as fallen off the bus
	// (NVML_ERROR_GPU_IS_LOST): identity from an earlier reading, no values.
	Lost bool `json:"lost,omitempty"`
}

// IsMIG reports whether d is a MIG instance.
func (d *Device) IsMIG() bool { return d.ParentUUID != "" }

// XidEvent is one Xid error reported by the driver.
type XidEvent struct {
	UUID string `json:"uuid"` // the physical GPU
	// GPUInstanceID is the MIG GPU instance the driver blamed, or -1.
	GPUInstanceID int    `json:"gpu_instance_id"`
	Xid           uint64 `json:"xid"`
}

// CallError is one failed library call.
type CallError struct {
	Call string // a fixed name such as "GetPowerUsage"
	UUID string
	Err  error
}

func (e CallError) Error() string { return e.Call + " on " + e.UUID + ": " + e.Err.Error() }

// Field names a value read from a device, in base units.
type Field string

// Fields every backend may fill. Ratios are 0..1.
const (
	MemoryTotalBytes       Field = "memory_total_bytes"
	MemoryUsedBytes        Field = "memory_used_bytes"
	UtilizationRatio       Field = "utilization_ratio"
	MemoryUtilRatio        Field = "memory_utilization_ratio"
	PowerWatts             Field = "power_watts"
	EnergyJoules           Field = "energy_joules"
	TemperatureCelsius     Field = "temperature_celsius"
	SMClockHertz           Field = "sm_clock_hertz"
	SMActiveRatio          Field = "sm_active_ratio"
	SMOccupancyRatio       Field = "sm_occupancy_ratio"
	TensorActiveRatio      Field = "tensor_active_ratio"
	DRAMActiveRatio        Field = "dram_active_ratio"
	FP64ActiveRatio        Field = "fp64_active_ratio"
	FP32ActiveRatio        Field = "fp32_active_ratio"
	FP16ActiveRatio        Field = "fp16_active_ratio"
	PCIeTXBytesPerSecond   Field = "pcie_tx_bytes_per_second"
	PCIeRXBytesPerSecond   Field = "pcie_rx_bytes_per_second"
	NVLinkTXBytesPerSecond Field = "nvlink_tx_bytes_per_second"
	NVLinkRXBytesPerSecond Field = "nvlink_rx_bytes_per_second"
	ECCCorrected           Field = "ecc_corrected_errors"
	ECCUncorrected         Field = "ecc_uncorrected_errors"
)
