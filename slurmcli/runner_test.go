// SPDX-License-Identifier: Apache-2.0

package slurmcli

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jobscope/jobscope/slurmcli/slurmclitest"
)

func TestRunnerNoShell(t *testing.T) {
	b := slurmclitest.New(t)
	b.Script("squeue", `printf '%s\n' "$@"`)
	r := &Runner{BinDir: b.Dir, Timeout: 10 * time.Second}
	marker := filepath.Join(t.TempDir(), "pwned")
	arg := "$(touch " + marker + ");`touch " + marker + "`|x"
	out, err := r.Run(context.Background(), "squeue", "-o", arg)
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != "-o\n"+arg+"\n" {
		t.Errorf("args came through as %q", out)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("an argument was interpreted by a shell")
	}
	_, stats := r.Stats().Snapshot()
	if st := stats["squeue"]; st.Runs != 1 || len(st.Errors) != 0 {
		t.Errorf("stats %+v", st)
	}
}

func TestRunnerExitError(t *testing.T) {
	b := slurmclitest.New(t)
	b.Script("sdiag", `echo "sdiag: unrecognized option '--json'" >&2; exit 1`)
	r := &Runner{BinDir: b.Dir, Timeout: 10 * time.Second}
	_, err := r.Run(context.Background(), "sdiag", "--json")
	var ee *ExitError
	if !errors.As(err, &ee) || ee.Code != 1 || !strings.Contains(ee.Stderr, "unrecognized option") {
		t.Fatalf("err = %v", err)
	}
	if !jsonRefused(err) {
		t.Error("unrecognized --json not seen as refused")
	}
	_, stats := r.Stats().Snapshot()
	if stats["sdiag"].Errors[CauseExit] != 1 {
		t.Errorf("stats %+v", stats["sdiag"])
	}
}

func TestRunnerStartError(t *testing.T) {
	r := &Runner{BinDir: t.TempDir(), Timeout: time.Second}
	if _, err := r.Run(context.Background(), "squeue"); err == nil {
		t.Fatal("missing command ran")
	}
	_, stats := r.Stats().Snapshot()
	if stats["squeue"].Errors[CauseStart] != 1 {
		t.Errorf("stats %+v", stats["squeue"])
	}
}

// A hanging command is killed at its timeout, with what it started.
func TestRunnerTimeoutKillsProcessGroup(t *testing.T) {
	b := slurmclitest.New(t)
	b.Hang("squeue")
	r := &Runner{BinDir: b.Dir, Timeout: 300 * time.Millisecond}
	_, err := r.Run(context.Background(), "squeue")
	if !errors.Is(err, ErrTimeout) {
		t.Fatalf("err = %v, want a timeout", err)
	}
	if pids := b.HungPIDs("squeue"); !slurmclitest.WaitGone(pids) {
		t.Errorf("processes %v survived the timeout", pids)
	}
	_, stats := r.Stats().Snapshot()
	if st := stats["squeue"]; st.Errors[CauseTimeout] != 1 || st.Runs != 1 {
		t.Errorf("stats %+v", st)
	}
}

func TestRunnerOutputLimit(t *testing.T) {
	b := slurmclitest.New(t)
	b.Script("squeue", "exec head -c 100000 /dev/zero")
	r := &Runner{BinDir: b.Dir, Timeout: 10 * time.Second, MaxOutput: 1000}
	if _, err := r.Run(context.Background(), "squeue"); err == nil {
		t.Fatal("output over the limit accepted")
	}
	_, stats := r.Stats().Snapshot()
	if stats["squeue"].Errors[CauseTooLarge] != 1 {
		t.Errorf("stats %+v", stats["squeue"])
	}
}
