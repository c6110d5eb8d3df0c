package main

import (
	"context"
	"time"
)

// scontrolFallback returns discovery's last-resort metadata source.
// TODO(controller issue): wire slurmcli's scontrol runner here.
func scontrolFallback(timeout time.Duration) func(ctx context.Context, jobID string) (map[string]string, error) {
	return nil
}
