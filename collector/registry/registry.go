// SPDX-License-Identifier: Apache-2.0

// Package registry lists every collector jobscope has.
package registry

import (
	"github.com/jobscope/jobscope/collector"
	"github.com/jobscope/jobscope/collector/cgroup"
	"github.com/jobscope/jobscope/collector/cluster"
	"github.com/jobscope/jobscope/collector/ebpf"
	"github.com/jobscope/jobscope/collector/gpu"
	"github.com/jobscope/jobscope/collector/power"
	"github.com/jobscope/jobscope/collector/process"
)

// Factories lists every collector jobscope has, in the order --help shows
// them. A collector joins by adding its factory function here.
func Factories() []collector.Factory {
	return append([]collector.Factory{
		cgroup.Factory(),
		ebpf.Factory(),
		process.Factory(),
		gpu.Factory(),
		power.Factory(),
	}, cluster.Factories()...)
}
