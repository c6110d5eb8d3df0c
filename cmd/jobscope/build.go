// SPDX-License-Identifier: Apache-2.0

package main

import (
	"cmp"
	"errors"
	"log/slog"
	"runtime"
	"slices"
	"sync"

	"github.com/spf13/pflag"

	"github.com/jobscope/jobscope/collector"
	"github.com/jobscope/jobscope/collector/ebpf"
	gpucoll "github.com/jobscope/jobscope/collector/gpu"
	"github.com/jobscope/jobscope/discovery"
)

// buildExporter detects the cgroup layout, builds the node resources the
// enabled collectors share (job discovery and its background squeue, the
// eBPF programs, the GPU backend), then the collectors. The returned func
// releases what they hold, at shutdown.
func buildExporter(o *options, fs *pflag.FlagSet, set *collector.Set, mode collector.Mode, logger *slog.Logger) (*collector.Exporter, func(), error) {
	names := set.Enabled(mode)
	env := &collector.Env{ProcFS: o.procfs, SysFS: o.sysfs, Logger: logger, Level: o.level}
	eo := collector.Options{Problems: collector.NewProblems(logger), Logger: logger,
		Info: collector.BuildInfo{Version: version, Revision: revision, GoVersion: runtime.Version()}}
	if set.NeedsJobs(names) {
		layout, err := discovery.DetectLayout(o.cgroupfs, o.procfs)
		if err != nil {
			// Without cgroups no job is found; the exporter still serves its
			// self metrics and any collector that does not need jobs.
			logger.Error("no cgroup hierarchy found: no jobs will be reported", "err", err)
		}
		env.Layout = layout
		queue, err := nodeMetaQueue(fs, o, logger)
		if err != nil {
			return nil, nil, err
		}
		eo.Discoverer = discovery.New(discovery.Config{
			Layout: layout, ProcFS: o.procfs, PropsDir: o.propsDir, Logger: logger,
			Queue: queue, QueueInterval: o.nodeMeta.interval, QueueTimeout: o.nodeMeta.timeout,
			NodeNames: o.nodeMeta.nodeNames, Hostname: shortHostname(),
		})
		logSurvey(logger, layout, eo.Discoverer.Survey(), queue != nil)
	}
	// A failure here is the collector's: its constructor returns it, and
	// it is logged once and reported as success 0 below.
	if slices.Contains(names, "ebpf") {
		env.BPF, env.BPFErr = ebpf.Load(env, *o.bpf)
	}
	if slices.Contains(names, "gpu") {
		env.GPU, env.GPUErr = gpucoll.Open(env, *o.gpu)
		eo.GPU = env.GPU
	}
	var badFlag error
	built := set.Build(env, names, func(name string, err error) {
		if errors.As(err, new(*collector.FlagError)) {
			badFlag = cmp.Or(badFlag, err)
			return
		}
		logger.Warn("collector unavailable: its success metric stays 0", "collector", name, "err", err)
	})
	if badFlag != nil {
		releaseEnv(env, eo, logger)
		return nil, nil, &flagError{badFlag}
	}
	exp := collector.NewExporter(built, eo)
	var once sync.Once
	release := func() {
		once.Do(func() {
			exp.Close()
			releaseEnv(env, eo, logger)
		})
	}
	return exp, release, nil
}

// releaseEnv detaches the eBPF programs (their maps stay pinned), closes the
// GPU backend and stops the background squeue.
func releaseEnv(env *collector.Env, eo collector.Options, logger *slog.Logger) {
	if env.BPF != nil {
		if err := env.BPF.Close(); err != nil {
			logger.Warn("detaching eBPF programs", "err", err)
		}
	}
	if env.GPU != nil {
		_ = env.GPU.Close()
	}
	if eo.Discoverer != nil {
		eo.Discoverer.Close() // its background squeue
	}
}
