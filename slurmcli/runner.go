// SPDX-License-Identifier: Apache-2.0

// Package slurmcli runs Slurm's client commands (never through a shell),
// parses their output with pure parsers and keeps one cached snapshot of the
// cluster per poll interval, shared by every collector and every scrape.
package slurmcli

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/jobscope/jobscope/internal/cmdrun"
)

// Error causes counted per command.
const (
	CauseTimeout  = string(cmdrun.Timeout)  // killed at the command timeout
	CauseExit     = string(cmdrun.Exit)     // non-zero exit status
	CauseStart    = string(cmdrun.Start)    // not found, not executable
	CauseTooLarge = string(cmdrun.TooLarge) // stdout over the output limit
	CauseParse    = "parse"                 // output not understood
	CauseCanceled = string(cmdrun.Canceled) // the exporter shut down mid-run
)

// defaultMaxOutput bounds what one command may print, so a runaway command
// cannot exhaust the exporter's memory (squeue --json of 100k jobs is a few
// hundred MiB).
const defaultMaxOutput = 1 << 30

// stderrKeep is how much stderr is kept for the log and the error.
const stderrKeep = 4096

// Runner runs Slurm commands with a per-command timeout, each in its own
// process group so that the whole group (a wrapper script and what it
// started) is killed when the timeout fires.
type Runner struct {
	// BinDir, when set, is where the commands are looked up; otherwise PATH.
	BinDir string
	// Paths overrides the path of single commands ("squeue" -> "/opt/x/squeue").
	Paths map[string]string
	// Timeout bounds each command; 0 means 30s.
	Timeout time.Duration
	// MaxOutput bounds stdout in bytes; 0 means 1 GiB.
	MaxOutput int
	Logger    *slog.Logger

	stats Stats
}

// ExitError is a command that ran and failed; Stderr helps tell an
// unsupported option from a slurmctld outage.
type ExitError struct {
	Command string
	Code    int
	Stderr  string
}

func (e *ExitError) Error() string {
	return fmt.Sprintf("%s exited with status %d: %s", e.Command, e.Code, strings.TrimSpace(e.Stderr))
}

// ErrTimeout marks a command killed at its timeout.
var ErrTimeout = cmdrun.ErrTimeout

// Path returns the program run for name.
func (r *Runner) Path(name string) string {
	if p := r.Paths[name]; p != "" {
		return p
	}
	if r.BinDir != "" {
		return filepath.Join(r.BinDir, name)
	}
	return name
}

// Run runs name with args and returns its stdout. Arguments are passed as
// they are (no shell), so nothing in them is ever interpreted.
func (r *Runner) Run(ctx context.Context, name string, args ...string) ([]byte, error) {
	return r.RunInput(ctx, name, nil, args...)
}

// RunInput is Run with stdin fed from in (sacctmgr reads a batch of
// commands there, one process for many jobs).
func (r *Runner) RunInput(ctx context.Context, name string, in io.Reader, args ...string) ([]byte, error) {
	var out []byte
	err := r.run(name, args, in, func(s cmdrun.Spec) (cmdrun.Result, error) {
		res, err := cmdrun.Run(ctx, s)
		out = res.Stdout
		return res, err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Stream runs name with args like Run, handing its stdout to consume as
// it comes (see cmdrun.Stream): the output is never held whole. A failed
// command's error wins over consume's, which comes back as it is.
func (r *Runner) Stream(ctx context.Context, name string, args []string, consume func(io.Reader) error) error {
	return r.run(name, args, nil, func(s cmdrun.Spec) (cmdrun.Result, error) { return cmdrun.Stream(ctx, s, consume) })
}

func (r *Runner) run(name string, args []string, in io.Reader, exec func(cmdrun.Spec) (cmdrun.Result, error)) error {
	timeout := r.Timeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	maxOut := r.MaxOutput
	if maxOut <= 0 {
		maxOut = defaultMaxOutput
	}
	res, err := exec(cmdrun.Spec{
		Path: r.Path(name), Args: args, Stdin: in, Timeout: timeout, MaxStdout: maxOut, MaxStderr: stderrKeep,
		// Slurm prints times as configured by this variable; the parsers
		// expect the standard ISO form.
		Env:       append(os.Environ(), "SLURM_TIME_FORMAT=standard"),
		WaitDelay: 2 * time.Second,
	})
	cause, d := string(res.Cause), res.Duration
	if res.Cause == cmdrun.Exit {
		err = &ExitError{Command: name, Code: res.ExitCode, Stderr: res.Stderr}
	}
	r.stats.record(name, d, cause)
	if r.Logger != nil {
		if err != nil {
			r.Logger.Debug("slurm command failed", "command", name, "args", args, "err", err)
		} else if res.Stderr != "" {
			r.Logger.Debug("slurm command wrote to stderr", "command", name, "stderr", strings.TrimSpace(res.Stderr))
		}
	}
	return err
}

// Stats returns the per-command counters.
func (r *Runner) Stats() *Stats { return &r.stats }

// Stats counts runs, errors and time per command, for jobscope's own metrics.
type Stats struct {
	mu sync.Mutex
	m  map[string]*CommandStats
}

// CommandStats is one command's counters since start.
type CommandStats struct {
	Runs         float64
	Seconds      float64
	LastDuration time.Duration
	Errors       map[string]float64 // by cause
}

func (s *Stats) record(name string, d time.Duration, cause string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.get(name)
	c.Runs++
	c.Seconds += d.Seconds()
	c.LastDuration = d
	if cause != "" {
		c.Errors[cause]++
	}
}

// refused counts the records a parser left out of name's output and logs
// the first time this runner's name leaves any out; it returns the
// *RefusedError for the caller (nil when none was left out).
func (r *Runner) refused(name string, ref Refused) error {
	if ref.Records == 0 {
		return nil
	}
	err := &RefusedError{Command: name, Refused: ref}
	if r.stats.recordErrors(name, ref.Records) && r.Logger != nil {
		r.Logger.Warn("slurm command printed records that cannot be read or name a job twice (a job name or other user text "+
			"made to look like Slurm's output?); they are left out, the rest is used (logged once per command, counted as cause=record)",
			"command", name, "err", err)
	}
	return err
}

// recordErrors counts n records of name left out; true the first time.
func (s *Stats) recordErrors(name string, n int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.get(name)
	first := c.Errors[CauseRecord] == 0
	c.Errors[CauseRecord] += float64(n)
	return first
}

// ParseError counts output of name that could not be parsed.
func (s *Stats) ParseError(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.get(name).Errors[CauseParse]++
}

func (s *Stats) get(name string) *CommandStats {
	if s.m == nil {
		s.m = map[string]*CommandStats{}
	}
	c := s.m[name]
	if c == nil {
		c = &CommandStats{Errors: map[string]float64{}}
		s.m[name] = c
	}
	return c
}

// Snapshot copies the counters, sorted by command name.
func (s *Stats) Snapshot() (names []string, out map[string]CommandStats) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out = make(map[string]CommandStats, len(s.m))
	for n, c := range s.m {
		cp := *c
		cp.Errors = make(map[string]float64, len(c.Errors))
		for k, v := range c.Errors {
			cp.Errors[k] = v
		}
		out[n] = cp
		names = append(names, n)
	}
	sort.Strings(names)
	return names, out
}
