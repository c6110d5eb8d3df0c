package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/spf13/pflag"

	"github.com/jobscope/jobscope/collector/cluster"
	"github.com/jobscope/jobscope/slurmcli"
)

// scontrolFallback returns discovery's last-resort metadata source: one
// `scontrol -o show job <id>` per job (discovery caches and bounds retries),
// using the --slurm.* command paths.
func scontrolFallback(fs *pflag.FlagSet, timeout time.Duration, logger *slog.Logger) (func(ctx context.Context, jobID string) (map[string]string, error), error) {
	r, err := cluster.SlurmRunnerFromFlags(fs, logger)
	if err != nil {
		return nil, err
	}
	r.Timeout = timeout
	return func(ctx context.Context, id string) (map[string]string, error) {
		return slurmcli.ScontrolJobFields(ctx, r, id)
	}, nil
}
