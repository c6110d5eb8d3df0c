// Package slurmcli runs Slurm's client commands (never through a shell),
// parses their output with pure parsers and keeps one cached snapshot of the
// cluster per poll interval, shared by every collector and every scrape.
package slurmcli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Error causes counted per command.
const (
	CauseTimeout  = "timeout"   // killed at the command timeout
	CauseExit     = "exit"      // non-zero exit status
	CauseStart    = "start"     // not found, not executable
	CauseTooLarge = "too_large" // stdout over the output limit
	CauseParse    = "parse"     // output not understood
	CauseCanceled = "canceled"  // the exporter shut down mid-run
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
var ErrTimeout = errors.New("command timed out and was killed")

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
	timeout := r.Timeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	ctx, cancel := context.WithTimeoutCause(ctx, timeout, ErrTimeout)
	defer cancel()

	var stdout limitedBuffer
	stdout.limit = r.MaxOutput
	if stdout.limit <= 0 {
		stdout.limit = defaultMaxOutput
	}
	var stderr limitedBuffer
	stderr.limit = stderrKeep
	stderr.truncate = true

	cmd := exec.CommandContext(ctx, r.Path(name), args...)
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	// Slurm prints times as configured by this variable; the parsers expect
	// the standard ISO form.
	cmd.Env = append(os.Environ(), "SLURM_TIME_FORMAT=standard")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		// Negative pid: the whole process group the command leads.
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	// If a grandchild escaped the group and holds the pipes, stop waiting.
	cmd.WaitDelay = 2 * time.Second

	start := time.Now()
	err := cmd.Run()
	d := time.Since(start)

	cause := ""
	switch {
	case err == nil:
	case stdout.over:
		cause, err = CauseTooLarge, fmt.Errorf("%s: output over %d bytes", name, stdout.limit)
	case errors.Is(context.Cause(ctx), ErrTimeout):
		cause, err = CauseTimeout, fmt.Errorf("%s after %s: %w", name, timeout, ErrTimeout)
	case ctx.Err() != nil:
		cause, err = CauseCanceled, fmt.Errorf("%s: %w", name, context.Cause(ctx))
	default:
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			cause, err = CauseExit, &ExitError{Command: name, Code: ee.ExitCode(), Stderr: stderr.String()}
		} else {
			cause, err = CauseStart, fmt.Errorf("%s: %w", name, err)
		}
	}
	r.stats.record(name, d, cause)
	if r.Logger != nil {
		if err != nil {
			r.Logger.Debug("slurm command failed", "command", name, "args", args, "err", err)
		} else if stderr.Len() > 0 {
			r.Logger.Debug("slurm command wrote to stderr", "command", name, "stderr", strings.TrimSpace(stderr.String()))
		}
	}
	if err != nil {
		return nil, err
	}
	return stdout.Bytes(), nil
}

// Stats returns the per-command counters.
func (r *Runner) Stats() *Stats { return &r.stats }

// limitedBuffer keeps at most limit bytes; past it, it either drops the
// rest (stderr) or fails the write, which ends the command (stdout). The
// buffer is a field, not embedded: an embedded bytes.Buffer's ReadFrom
// would let io.Copy bypass Write and the limit.
type limitedBuffer struct {
	buf      bytes.Buffer
	limit    int
	truncate bool
	over     bool
}

func (b *limitedBuffer) Len() int       { return b.buf.Len() }
func (b *limitedBuffer) Bytes() []byte  { return b.buf.Bytes() }
func (b *limitedBuffer) String() string { return b.buf.String() }

func (b *limitedBuffer) Write(p []byte) (int, error) {
	room := b.limit - b.buf.Len()
	if len(p) <= room {
		return b.buf.Write(p)
	}
	if room > 0 {
		b.buf.Write(p[:room])
	}
	if b.truncate {
		return len(p), nil
	}
	b.over = true
	return 0, errors.New("output limit reached")
}

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
