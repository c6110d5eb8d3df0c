// SPDX-License-Identifier: Apache-2.0

package main

import (
	"cmp"
	"errors"
	"log/slog"
	"runtime"
	"slices"
	"sync"

	"github.com/jobscope/jobscope/collector"
	"github.com/jobscope/jobscope/collector/provide"
	"github.com/jobscope/jobscope/collector/provide/ebpfprogs"
	"github.com/jobscope/jobscope/discovery"
)

// buildExporter detects the cgroup layout, builds job discovery and its
// background squeue, starts the providers the enabled collectors need,
// then builds the collectors. The returned func releases what they hold,
// at shutdown.
func buildExporter(o *options, set *collector.Set, mode collector.Mode, logger *slog.Logger) (*collector.Exporter, func(), error) {
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
		queue, err := jobQueue(o.providers, logger)
		if err != nil {
			return nil, nil, err
		}
		eo.Discoverer = discovery.New(discovery.Config{
			Layout: layout, ProcFS: o.procfs, PropsDir: o.propsDir, Logger: logger,
			Queue: queue.Run, QueueInterval: queue.Interval, QueueTimeout: queue.Timeout,
			NodeNames: o.nodeNames, Hostname: shortHostname(),
		})
		logSurvey(logger, layout, eo.Discoverer.Survey(), queue.Run != nil)
	}
	// A provider's failure is its collectors': their constructors return
	// it, and it is logged once and reported as success 0 below.
	env.Providers = o.providers
	if err := o.providers.Start(&provide.Env{ProcFS: o.procfs, SysFS: o.sysfs, Layout: env.Layout, Logger: logger}, set.Needs(names)); err != nil {
		return nil, nil, err
	}
	if mode == collector.ModeNode && !slices.Contains(set.Needs(names), ebpfprogs.Name) {
		for _, p := range o.providers.Providers() {
			if ep, ok := p.(*ebpfprogs.Provider); ok {
				ep.DetachUnused(logger)
			}
		}
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

// releaseEnv closes the started providers (eBPF programs let go of, their
// links and maps pinned; the GPU backend closed) and stops the background squeue.
func releaseEnv(env *collector.Env, eo collector.Options, logger *slog.Logger) {
	if err := env.Providers.Close(); err != nil {
		logger.Warn("closing providers", "err", err)
	}
	if eo.Discoverer != nil {
		eo.Discoverer.Close() // its background squeue
	}
}
