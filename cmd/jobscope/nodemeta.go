// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/spf13/pflag"

	"github.com/jobscope/jobscope/discovery"
	"github.com/jobscope/jobscope/slurmcli"
)

// flagError is a flag value checked at start: the exit status is 2, as for
// an unknown flag.
type flagError struct{ err error }

func (e *flagError) Error() string { return e.err.Error() }

// nodeMetaQueue returns discovery's background squeue from the
// --slurm.node-metadata.* flags, or nil when it is off. Node mode has its
// own flags for it: the controller's --slurm.* flags exist only where a
// cluster collector registers them.
func nodeMetaQueue(fs *pflag.FlagSet, o *options, logger *slog.Logger) (func(context.Context, discovery.QueueRequest) ([]slurmcli.NodeJob, error), error) {
	nm := &o.nodeMeta
	if fs.Changed("slurm.scontrol-fallback") {
		logger.Warn("--slurm.scontrol-fallback is deprecated: job metadata comes from the props file, the job's environment and one background squeue (--slurm.node-metadata.*); =false turns that squeue off")
		if !o.scontrolFallback && !fs.Changed("slurm.node-metadata.squeue") {
			nm.squeue = false
		}
	}
	if fs.Changed("slurm.scontrol-timeout") {
		logger.Warn("--slurm.scontrol-timeout is deprecated: use --slurm.node-metadata.timeout")
		if !fs.Changed("slurm.node-metadata.timeout") {
			nm.timeout = o.scontrolTimeout
		}
	}
	format, err := slurmcli.ParseFormat(nm.format)
	switch {
	case err != nil:
		return nil, &flagError{fmt.Errorf("--slurm.node-metadata.format: %w", err)}
	case nm.interval <= 0:
		return nil, &flagError{fmt.Errorf("--slurm.node-metadata.interval must be positive, got %s", nm.interval)}
	case nm.timeout <= 0:
		return nil, &flagError{fmt.Errorf("--slurm.node-metadata.timeout must be positive, got %s", nm.timeout)}
	case nm.command == "":
		return nil, &flagError{fmt.Errorf("--slurm.node-metadata.squeue-command is empty")}
	}
	if !nm.squeue {
		return nil, nil
	}
	// One node's jobs in text are ~100 bytes each: 8 MiB is tens of
	// thousands of jobs, and a runaway squeue costs a compute node at most
	// that (measured by the adversarial suite: 64 MiB let RSS reach 290 MiB).
	r := &slurmcli.Runner{Paths: map[string]string{"squeue": nm.command}, Timeout: nm.timeout,
		MaxOutput: 8 << 20, Logger: logger}
	return func(ctx context.Context, req discovery.QueueRequest) ([]slurmcli.NodeJob, error) {
		return slurmcli.QueryNodeJobs(ctx, r, req.Nodes, format, req.SLUID)
	}, nil
}

// shortHostname is the host name up to its first dot: Slurm's default
// NodeName.
func shortHostname() string {
	h, err := os.Hostname()
	if err != nil {
		return ""
	}
	h, _, _ = strings.Cut(h, ".")
	return h
}

// logSurvey logs, at start, what discovery found: an admin whose node
// exports no job sees at once whether jobscope looked in the right place.
func logSurvey(logger *slog.Logger, layout discovery.Layout, s discovery.ScanStats, squeue bool) {
	args := []any{"cgroup", layout.String(), "scopes", s.Scopes}
	for _, scheme := range discovery.Schemes {
		args = append(args, "job_dirs_"+scheme, s.Dirs[scheme])
	}
	args = append(args, "squeue_metadata", squeue)
	if layout.V2 == "" && len(layout.V1) == 0 {
		return // no hierarchy: logged as an error already, no scope to wait for
	}
	if len(s.Scopes) == 0 {
		logger.Info("job discovery: no Slurm cgroup scope yet (slurmstepd creates it with the first job)", args...)
		return
	}
	logger.Info("job discovery: layout found", args...)
}
