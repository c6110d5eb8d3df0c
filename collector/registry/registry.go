// SPDX-License-Identifier: Apache-2.0

// Package registry lists every collector and every provider (shared input
// of the collectors) jobscope has.
package registry

import (
	"github.com/jobscope/jobscope/collector"
	"github.com/jobscope/jobscope/collector/cgroup"
	"github.com/jobscope/jobscope/collector/cluster"
	"github.com/jobscope/jobscope/collector/ebpf"
	"github.com/jobscope/jobscope/collector/gpu"
	"github.com/jobscope/jobscope/collector/power"
	"github.com/jobscope/jobscope/collector/process"
	"github.com/jobscope/jobscope/collector/provide"
	"github.com/jobscope/jobscope/collector/provide/ebpfprogs"
	"github.com/jobscope/jobscope/collector/provide/gpus"
	"github.com/jobscope/jobscope/collector/provide/jobcgroup"
	"github.com/jobscope/jobscope/collector/provide/slurm"
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

// Providers lists every provider, in the order they start (a provider may
// use those before it). A provider joins by adding its constructor here;
// it starts only when an enabled collector names it in its Needs.
func Providers() []provide.Provider {
	return []provide.Provider{
		jobcgroup.New(),
		ebpfprogs.New(),
		gpus.New(),
		slurm.New(),
	}
}
