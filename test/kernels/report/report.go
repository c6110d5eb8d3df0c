// SPDX-License-Identifier: Apache-2.0

// Package report is what test/kernels/vmcheck finds on one kernel, as one
// JSON line on the console, and what test/kernels/matrix reads back.
package report

import (
	"encoding/json"
	"strings"
)

// Marker starts the result line on the serial console.
const Marker = "JSX-RESULT "

// Result is one kernel's answers.
type Result struct {
	Kernel string
	NoBTF  bool // /sys/kernel/btf/vmlinux hidden behind an empty file
	// Probes maps each loader feature probe to "" (present) or its error.
	Probes map[string]string
	// Programs: every program of the object loaded alone.
	Programs []Program
	// Direct is bpf.Load and reads around a burner (nil: Load failed, see
	// LoadErr).
	Direct  *Direct
	LoadErr string
	Product Product
	// Failures are the checks that failed in the VM.
	Failures []string
}

// Program is the verifier's answer for one program.
type Program struct {
	Name  string
	Err   string
	Insns int
}

// Direct is what the loaded programs counted.
type Direct struct {
	Attached        int
	LiveErr, NetErr string
	// Reads while a thread runs on its core: cpu.stat before, per-core
	// sum, cpu.stat after, in ns.
	Reads [][3]uint64
	// Counted says, per job directory name, whether it got an entry.
	Counted map[string]bool
	// WChar and TxBytes of the IO job against what it wrote and sent.
	WChar, Written, TxBytes, Sent uint64
	// Pinned links at the restart, and how many the second load took over.
	Pinned, HandedOver int
}

// Product is the jobscope binary started on that kernel and scraped.
type Product struct {
	Served  bool
	Success map[string]float64 // jobscope_scrape_collector_success
	// Families of the test job's series present in the scrape.
	Families []string
	// PerCore is the job's per-core sum; CPUStat the cgroup's usage read
	// after the scrape (s).
	PerCore, CPUStat float64
	// Log lines of the ebpf collector.
	Log []string
}

// Line encodes r for the console.
func (r *Result) Line() string {
	b, _ := json.Marshal(r)
	return Marker + string(b)
}

// Parse finds the result line in console output (nil if there is none).
func Parse(console string) *Result {
	for _, l := range strings.Split(console, "\n") {
		i := strings.Index(l, Marker)
		if i < 0 {
			continue
		}
		var r Result
		if json.Unmarshal([]byte(strings.TrimSpace(l[i+len(Marker):])), &r) == nil {
			return &r
		}
	}
	return nil
}
