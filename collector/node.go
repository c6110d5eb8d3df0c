// SPDX-License-Identifier: Apache-2.0

package collector

import (
	"github.com/jobscope/jobscope/bpf"
	"github.com/jobscope/jobscope/discovery"
	"github.com/jobscope/jobscope/gpu"
)

// BPF is the node's loaded eBPF programs, built in cmd when the ebpf
// collector is on and handed to the collectors on Env: the ebpf collector
// reads their maps, the cgroup and process collectors leave per-core CPU
// and per-process IO to them.
type BPF struct {
	Reader bpf.Reader
	// Key gives a job's map key (false: the job has no directory in a
	// hierarchy the programs key by, or it vanished).
	Key func(j *discovery.Job) (bpf.Key, bool)
	// Close detaches the programs (pinned maps stay for the next run).
	Close func() error
}

// GPUSource reads the node's GPUs and maps them to jobs: built in cmd when
// the gpu collector is on, read at most once per scrape (Scrape.GPU), so
// the gpu and power collectors see one reading.
type GPUSource interface {
	// Name is the backend's name (nvml, dcgm, fake).
	Name() string
	// Read reads every device and maps the devices to s's jobs.
	Read(s *Scrape) (*GPUReading, error)
	Close() error
}

// GPUReading is one scrape's reading of every GPU.
type GPUReading struct {
	*gpu.Snapshot
	// Assign maps a device UUID to the job of this scrape that holds it.
	Assign map[string]gpu.Assignment
	// Problems met while mapping (conflicts, bad references).
	Problems []gpu.Problem
}

// Holder returns the job of this scrape holding the device, or "".
func (r *GPUReading) Holder(uuid string) string {
	if a, ok := r.Assign[uuid]; ok {
		return a.JobID
	}
	return ""
}
