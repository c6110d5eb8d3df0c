// SPDX-License-Identifier: Apache-2.0

package cmdrun

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestRun(t *testing.T) {
	ctx := context.Background()
	base := Spec{Timeout: 10 * time.Second, MaxStdout: 1 << 20, MaxStderr: 100, WaitDelay: time.Second}
	ok := base
	ok.Path, ok.Args = "/bin/sh", []string{"-c", "echo hi; echo warn >&2"}
	r, err := Run(ctx, ok)
	if err != nil || string(r.Stdout) != "hi\n" || r.Stderr != "warn\n" {
		t.Fatalf("ok: %+v %v", r, err)
	}
	// The output cap holds even for a large write (no io.Copy bypass).
	big := base
	big.Path, big.Args, big.MaxStdout = "/usr/bin/head", []string{"-c", "10000000", "/dev/zero"}, 1<<16
	if r, err := Run(ctx, big); err == nil || r.Cause != TooLarge || len(r.Stdout) != 0 {
		t.Errorf("too large: cause %q, %d bytes, %v", r.Cause, len(r.Stdout), err)
	}
	hang := base
	hang.Path, hang.Args, hang.Timeout = "/bin/sh", []string{"-c", "sleep 30 & sleep 30"}, 200*time.Millisecond
	start := time.Now()
	if r, err := Run(ctx, hang); !errors.Is(err, ErrTimeout) || r.Cause != Timeout {
		t.Errorf("hang: %q %v", r.Cause, err)
	}
	if time.Since(start) > 5*time.Second {
		t.Error("the process group was not killed at the timeout")
	}
	fail := base
	fail.Path, fail.Args = "/bin/sh", []string{"-c", "echo no >&2; exit 3"}
	if r, err := Run(ctx, fail); err == nil || r.Cause != Exit || r.ExitCode != 3 || r.Stderr != "no\n" {
		t.Errorf("exit: %+v %v", r, err)
	}
	missing := base
	missing.Path = "/nonexistent/tool"
	if r, _ := Run(ctx, missing); r.Cause != Start {
		t.Errorf("missing: %q", r.Cause)
	}
}
