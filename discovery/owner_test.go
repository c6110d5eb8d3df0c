// SPDX-License-Identifier: Apache-2.0

package discovery

import (
	"os"
	"path/filepath"
	"testing"
)

// A rootless container in a job runs processes as a /etc/subuid uid; after
// pids wrap, one can have a lower pid than the job's first process. The
// owner is the uid of the oldest non-root process (the one slurmstepd
// started), not of the lowest pid.
func TestOwnerIsOldestProcess(t *testing.T) {
	cg, proc := t.TempDir(), t.TempDir()
	addJob(t, cg, proc, "job_10", 9000, "SLURM_JOB_ID=10\x00")
	task := filepath.Join(cg, "system.slice", "slurmstepd.scope", "job_10", "step_0", "user", "task_0")
	must(t, os.WriteFile(filepath.Join(task, "cgroup.procs"), []byte("9000\n4010\n"), 0o644))
	must(t, os.MkdirAll(filepath.Join(proc, "4010"), 0o755))
	uid := map[string]int{"9000": 1001, "4010": 100000} // 4010: a container's process, started later
	start := map[string]uint64{"9000": 500, "4010": 900}
	cfg := trustConfig(cg, proc)
	cfg.ProcOwner = func(dir string) (int, bool) { u, ok := uid[filepath.Base(dir)]; return u, ok }
	cfg.ProcStart = func(dir string) (uint64, bool) { s, ok := start[filepath.Base(dir)]; return s, ok }
	cfg.LookupUser = func(u int) (string, error) { return map[int]string{1001: "alice", 100000: "subuid"}[u], nil }
	jobs := New(cfg).Discover(t.Context(), nil)
	if m := jobs[0].Meta; m.UID != 1001 || m.User != "alice" {
		t.Errorf("owner %d %q, want alice (1001), whose process started first", m.UID, m.User)
	}
}

func TestParseStatStart(t *testing.T) {
	// comm "a) (b c" : a process names itself, parentheses and spaces included.
	line := "4010 (a) (b c) S 1 4010 4010 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 123456 1000 10 18446744073709551615\n"
	if st, ok := parseStatStart([]byte(line)); !ok || st != 123456 {
		t.Errorf("start %d %v, want 123456", st, ok)
	}
	if _, ok := parseStatStart([]byte("4010 (x) S 1 2\n")); ok {
		t.Error("a short line gave a start time")
	}
}
