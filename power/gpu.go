// SPDX-License-Identifier: Apache-2.0

package power

// GPUDevice is one GPU's energy counter and the job holding the GPU now.
type GPUDevice struct {
	ID     string  // stable device id (UUID)
	JobID  string  // "" when no job holds it
	Joules float64 // monotonic device energy (NVML total energy consumption)
}
