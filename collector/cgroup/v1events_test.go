// SPDX-License-Identifier: Apache-2.0

package cgroup

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// v1 OOM kills and failcnt are counted where they happen (a step's task
// cgroup), summed per job, and do not go down when the step ends.
func TestV1EventsSummedAndMonotonic(t *testing.T) {
	root := t.TempDir()
	if out, err := exec.Command("cp", "-a", filepath.Join("..", "..", "testdata", "node-v1")+"/.", root).CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	job := filepath.Join(root, "cgroup", "memory", "slurm_vm", "uid_1002", "job_3")
	r := newBadRunV1(t, root)
	oom := func() string {
		out := r.scrape(t)
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(l, `slurm_job_memory_events_total{account="chemistry",event="oom_kill",jobid="3"`) {
				return l[strings.LastIndex(l, " ")+1:]
			}
		}
		return "absent"
	}
	if got := oom(); got != "1" {
		t.Fatalf("oom_kill from step_batch/task_0: got %s, want 1", got)
	}
	if err := os.RemoveAll(filepath.Join(job, "step_batch")); err != nil {
		t.Fatal(err)
	}
	if got := oom(); got != "1" {
		t.Fatalf("after the step ended: got %s, want 1 (monotonic)", got)
	}
	step := filepath.Join(job, "step_1", "task_0")
	if err := os.MkdirAll(step, 0o755); err != nil {
		t.Fatal(err)
	}
	_ = os.WriteFile(filepath.Join(step, "memory.oom_control"), []byte("oom_kill_disable 0\nunder_oom 0\noom_kill 2\n"), 0o644)
	if got := oom(); got != "3" {
		t.Fatalf("a later step's OOM kills add up: got %s, want 3", got)
	}
}
