// SPDX-License-Identifier: Apache-2.0

package main

import (
	"log/slog"
	"os"
	"strings"

	"github.com/jobscope/jobscope/collector/provide"
	"github.com/jobscope/jobscope/discovery"
)

// flagError is a flag value checked at start: the exit status is 2, as for
// an unknown flag.
type flagError struct{ err error }

func (e *flagError) Error() string { return e.err.Error() }

// jobQueue returns job discovery's background squeue from the provider
// that gives it (provide.JobQueue), found by what it does, not its name;
// a zero Queue when no provider does.
func jobQueue(ps *provide.Set, logger *slog.Logger) (provide.Queue, error) {
	for _, p := range ps.Providers() {
		if jq, ok := p.(provide.JobQueue); ok {
			q, err := jq.NodeQueue(logger)
			if err != nil {
				return q, &flagError{err}
			}
			return q, nil
		}
	}
	return provide.Queue{}, nil
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
