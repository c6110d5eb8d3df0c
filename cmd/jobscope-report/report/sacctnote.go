// SPDX-License-Identifier: Apache-2.0

package report

import (
	"errors"
	"fmt"
	"strings"

	"github.com/jobscope/jobscope/slurmcli"
)

// sacctTrouble turns a failed sacct run into one sentence for the report.
// sacct's stderr is several "sacct: error: ..." lines (four when slurmdbd
// is down) that say the same thing in Slurm's internal terms: they are
// matched to a cause, and only an unknown failure quotes its first line,
// clipped.
func sacctTrouble(err error) string {
	var ee *slurmcli.ExitError
	if errors.Is(err, slurmcli.ErrTimeout) {
		return "sacct did not answer in time (is slurmdbd overloaded?)"
	}
	if !errors.As(err, &ee) {
		return "sacct failed: " + clip(firstLine(err.Error()), 120)
	}
	s := strings.ToLower(ee.Stderr)
	switch {
	case strings.Contains(s, "accounting storage is disabled"):
		return "sacct: Slurm accounting storage is disabled on this cluster"
	case strings.Contains(s, "slurmdbd") || strings.Contains(s, "persistent connection") ||
		strings.Contains(s, "persistinit") || strings.Contains(s, "talking to the database"):
		return "sacct: Slurm accounting is not reachable (slurmdbd)"
	case strings.Contains(s, "permission denied") || strings.Contains(s, "access denied") ||
		strings.Contains(s, "not authorized"):
		return "sacct: Slurm refused the request (permission denied)"
	}
	msg := fmt.Sprintf("sacct failed (exit status %d)", ee.Code)
	if l := firstLine(strings.TrimSpace(ee.Stderr)); l != "" {
		msg += ": " + clip(strings.TrimPrefix(l, "sacct: "), 120)
	}
	return msg
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return strings.TrimSpace(l)
}

// sacctError is sacctTrouble's sentence for --sacct=always, still
// wrapping what failed.
type sacctError struct {
	msg string
	err error
}

func (e *sacctError) Error() string { return e.msg }
func (e *sacctError) Unwrap() error { return e.err }
