// SPDX-License-Identifier: Apache-2.0

// Package cmdrun runs an external command the way jobscope must: never
// through a shell, in its own process group killed whole at the timeout,
// with bounded output, so a hung or chatty Slurm or BMC tool can neither
// block a scrape nor grow the exporter's memory.
package cmdrun

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"syscall"
	"time"
)

// Cause classifies a failed run, for error counters.
type Cause string

const (
	OK       Cause = ""
	Timeout  Cause = "timeout"   // killed at the timeout
	Canceled Cause = "canceled"  // the caller's context ended first
	Exit     Cause = "exit"      // non-zero exit status
	Start    Cause = "start"     // could not be started (not found, not executable)
	TooLarge Cause = "too_large" // stdout over the limit
)

// ErrTimeout marks a command killed at its timeout.
var ErrTimeout = errors.New("command timed out and was killed")

// ErrTooLarge marks a command whose stdout passed MaxStdout.
var ErrTooLarge = errors.New("output over the limit")

// Spec says how to run one command.
type Spec struct {
	Path string
	Args []string
	Env  []string // nil: the exporter's environment
	// Stdin is what the command reads (nil: nothing): credentials go this
	// way, never in arguments, which every user can read in /proc; and
	// sacctmgr reads a batch of commands from it.
	Stdin     io.Reader
	Timeout   time.Duration
	MaxStdout int // stdout beyond this fails the run (TooLarge)
	// MaxStderr is what is kept of stderr (the rest is dropped).
	MaxStderr int
	// WaitDelay bounds the wait for pipes that a grandchild which escaped
	// the group keeps open.
	WaitDelay time.Duration
}

// Result is what a run gave.
type Result struct {
	Stdout   []byte
	Stderr   string
	Duration time.Duration
	Cause    Cause
	ExitCode int
}

// Run runs the command; err is nil only for Cause OK.
func Run(ctx context.Context, s Spec) (Result, error) {
	ctx, cancel := context.WithTimeoutCause(ctx, s.Timeout, ErrTimeout)
	defer cancel()
	stdout := limitedBuffer{limit: s.MaxStdout}
	stderr := limitedBuffer{limit: s.MaxStderr, truncate: true}
	cmd := exec.CommandContext(ctx, s.Path, s.Args...)
	cmd.Stdout, cmd.Stderr, cmd.Env, cmd.Stdin = &stdout, &stderr, s.Env, s.Stdin
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// Negative pid: the whole process group the command leads.
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = s.WaitDelay

	start := time.Now()
	err := cmd.Run()
	if cmd.Process != nil {
		// A grandchild left in the group (one that kept stdout open until
		// WaitDelay, or a daemonised helper) goes with its command: nothing
		// a run starts outlives it.
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	res := Result{Duration: time.Since(start), Stderr: string(stderr.buf)}
	switch {
	case err == nil:
		res.Stdout = stdout.buf
		return res, nil
	case stdout.over:
		res.Cause, err = TooLarge, fmt.Errorf("%s: %d bytes: %w", s.Path, s.MaxStdout, ErrTooLarge)
	case errors.Is(context.Cause(ctx), ErrTimeout) || errors.Is(ctx.Err(), context.DeadlineExceeded):
		// Our timeout, or a deadline the caller set: either way it took too long.
		res.Cause, err = Timeout, fmt.Errorf("%s after %s: %w", s.Path, s.Timeout, ErrTimeout)
	case ctx.Err() != nil:
		res.Cause, err = Canceled, fmt.Errorf("%s: %w", s.Path, context.Cause(ctx))
	default:
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			res.Cause, res.ExitCode = Exit, ee.ExitCode()
		} else {
			res.Cause, err = Start, fmt.Errorf("%s: %w", s.Path, err)
		}
	}
	return res, err
}

// limitedBuffer keeps at most limit bytes; past it, it either drops the
// rest (stderr) or fails the write, which ends the command (stdout). It
// grows its slice itself, never past limit: a bytes.Buffer doubles, so a
// command printing without end would hold up to twice the limit, plus the
// copy it grew from.
type limitedBuffer struct {
	buf      []byte
	limit    int
	truncate bool
	over     bool
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	n := min(len(p), b.limit-len(b.buf))
	if n > 0 && len(b.buf)+n > cap(b.buf) {
		grown := make([]byte, len(b.buf), min(max(2*cap(b.buf), len(b.buf)+n, 4096), b.limit))
		copy(grown, b.buf)
		b.buf = grown
	}
	b.buf = append(b.buf, p[:max(n, 0)]...)
	if n == len(p) || b.truncate {
		return len(p), nil
	}
	b.over = true
	return 0, errors.New("output limit reached")
}

// Stream runs the command like Run but hands its stdout to consume as it
// comes, through a pipe, instead of keeping it: a parser that reads record
// by record then holds one record, never the whole output (squeue --json of
// 100,000 jobs is a quarter of a GiB). MaxStdout still bounds what is read.
// Whatever consume leaves unread is drained (the command must not block on
// a full pipe); if consume fails, the command is killed instead. A failed
// command wins over consume's error: output cut short by an exit, timeout
// or limit is not a parse error. Result.Stdout stays nil.
func Stream(ctx context.Context, s Spec, consume func(io.Reader) error) (Result, error) {
	ctx, cancel := context.WithTimeoutCause(ctx, s.Timeout, ErrTimeout)
	defer cancel()
	stderr := limitedBuffer{limit: s.MaxStderr, truncate: true}
	cmd := exec.CommandContext(ctx, s.Path, s.Args...)
	cmd.Stderr, cmd.Env, cmd.Stdin = &stderr, s.Env, s.Stdin
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = s.WaitDelay
	// Through an io.Pipe rather than StdoutPipe: exec's own copy then ends
	// at WaitDelay even if a grandchild that left the group keeps the
	// descriptor, and Wait, which closes our end, never waits on consume.
	pr, pw := io.Pipe()
	cmd.Stdout = pw
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return Result{Cause: Start, Duration: time.Since(start)}, fmt.Errorf("%s: %w", s.Path, err)
	}
	waited := make(chan error, 1)
	go func() {
		err := cmd.Wait()
		_ = pw.Close()
		waited <- err
	}()
	lim := &limitedReader{r: pr, left: int64(s.MaxStdout)}
	cerr := consume(lim)
	if cerr == nil && !lim.over {
		_, _ = io.Copy(io.Discard, lim)
	}
	if cerr != nil || lim.over {
		// The rest is of no use: stop the command rather than read it.
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = pr.CloseWithError(errStopped)
	}
	err := <-waited
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // see Run
	res := Result{Duration: time.Since(start), Stderr: string(stderr.buf)}
	switch {
	case lim.over:
		return Result{Duration: res.Duration, Stderr: res.Stderr, Cause: TooLarge},
			fmt.Errorf("%s: %d bytes: %w", s.Path, s.MaxStdout, ErrTooLarge)
	case errors.Is(context.Cause(ctx), ErrTimeout) || errors.Is(ctx.Err(), context.DeadlineExceeded):
		res.Cause, err = Timeout, fmt.Errorf("%s after %s: %w", s.Path, s.Timeout, ErrTimeout)
	case ctx.Err() != nil:
		res.Cause, err = Canceled, fmt.Errorf("%s: %w", s.Path, context.Cause(ctx))
	case exited(err):
		// It failed on its own (before or after what consume made of its
		// output): an exit status, whose stderr says why.
		var ee *exec.ExitError
		_ = errors.As(err, &ee)
		res.Cause, res.ExitCode = Exit, ee.ExitCode()
	case cerr != nil:
		// Killed by us above, or its output not understood.
		return res, cerr
	case err != nil:
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			res.Cause, res.ExitCode = Exit, ee.ExitCode()
		} else {
			res.Cause, err = Start, fmt.Errorf("%s: %w", s.Path, err)
		}
	}
	return res, err
}

// exited: the command ended with an exit status of its own, not a signal.
func exited(err error) bool {
	var ee *exec.ExitError
	return errors.As(err, &ee) && ee.ExitCode() >= 0
}

// errStopped ends exec's copy of stdout once nobody reads it.
var errStopped = errors.New("stdout no longer read")

// limitedReader reads at most left bytes; one more fails the read and
// marks the run as over the limit.
type limitedReader struct {
	r    io.Reader
	left int64
	over bool
}

func (l *limitedReader) Read(p []byte) (int, error) {
	if l.over {
		return 0, ErrTooLarge
	}
	if int64(len(p)) > l.left+1 {
		p = p[:l.left+1]
	}
	n, err := l.r.Read(p)
	if int64(n) > l.left {
		l.over = true
		return int(l.left), ErrTooLarge
	}
	l.left -= int64(n)
	return n, err
}
