// SPDX-License-Identifier: Apache-2.0

package cmdrun

import (
	"context"
	"errors"
	"io"
	"os/exec"
	"testing"
	"time"
)

// TestStream: the consumer reads stdout as it comes; the limit, the
// timeout and an exit status hold as in Run, a failed command's error wins
// over the consumer's, and a consumer that gives up stops the command.
func TestStream(t *testing.T) {
	ctx := context.Background()
	base := Spec{Path: "/bin/sh", Timeout: 10 * time.Second, MaxStdout: 1 << 20, MaxStderr: 100, WaitDelay: time.Second}
	run := func(script string, consume func(io.Reader) error) (Result, error) {
		s := base
		s.Args = []string{"-c", script}
		return Stream(ctx, s, consume)
	}
	var got []byte
	readAll := func(r io.Reader) (err error) { got, err = io.ReadAll(r); return err }
	if r, err := run("echo hi; echo warn >&2", readAll); err != nil || string(got) != "hi\n" || r.Stderr != "warn\n" || r.Stdout != nil {
		t.Fatalf("ok: %+v %q %v", r, got, err)
	}
	// Unread output is drained: the command is not left blocked on a full pipe.
	if _, err := run("head -c 300000 /dev/zero", func(io.Reader) error { return nil }); err != nil {
		t.Fatalf("unread: %v", err)
	}
	big := base
	big.Path, big.Args, big.MaxStdout = "/usr/bin/head", []string{"-c", "10000000", "/dev/zero"}, 1<<16
	n := 0
	r, err := Stream(ctx, big, func(r io.Reader) error { b, err := io.ReadAll(r); n = len(b); return err })
	if !errors.Is(err, ErrTooLarge) || r.Cause != TooLarge || n > 1<<16 {
		t.Errorf("too large: cause %q, %d bytes read, %v", r.Cause, n, err)
	}
	// Output cut short by a failing command is its exit status, not the
	// consumer's complaint about it.
	bad := errors.New("truncated")
	if r, err := run("echo -n '{'; echo no >&2; exit 3", func(r io.Reader) error { _, _ = io.ReadAll(r); return bad }); r.Cause != Exit || r.ExitCode != 3 || errors.Is(err, bad) {
		t.Errorf("exit: %+v %v", r, err)
	}
	start := time.Now()
	if r, err := run("echo x; sleep 30", func(io.Reader) error { return bad }); !errors.Is(err, bad) || r.Cause != OK {
		t.Errorf("consumer error: %+v %v", r, err)
	}
	if time.Since(start) > 5*time.Second {
		t.Error("the command was not stopped when the consumer gave up")
	}
	// A grandchild that left the group and keeps stdout open delays the
	// end by WaitDelay, not until it exits; as in Run, the run failed.
	start = time.Now()
	if _, err := run("echo x; setsid sleep 8 & exit 0", readAll); !errors.Is(err, exec.ErrWaitDelay) || string(got) != "x\n" {
		t.Errorf("escaped grandchild: %q %v", got, err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("escaped grandchild held the run for %s", d)
	}
	hang := base
	hang.Args, hang.Timeout = []string{"-c", "sleep 30 & sleep 30"}, 200*time.Millisecond
	if r, err := Stream(ctx, hang, readAll); !errors.Is(err, ErrTimeout) || r.Cause != Timeout {
		t.Errorf("hang: %q %v", r.Cause, err)
	}
}
