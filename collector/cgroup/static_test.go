// SPDX-License-Identifier: Apache-2.0

package cgroup

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestLimitReadUntilSettled: a job's directory exists before slurmstepd
// writes its limits. In VM A the oomer's memory.max was first read as "max"
// and that answer kept for the static cache's minute, so a job with
// --mem=100M had no slurm_job_memory_limit_bytes. A young job's limits are
// read at every scrape; a settled job's still come from the cache.
func TestLimitReadUntilSettled(t *testing.T) {
	root := badNode(t)
	maxFile := filepath.Join(root, job100, "memory.max")
	set := func(v string) {
		t.Helper()
		if err := os.WriteFile(maxFile, []byte(v+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r := newBadRun(t, root)
	now := time.Unix(1795000000, 0)
	r.c.(*cgroupCollector).opts.Now = func() time.Time { return now }
	limit := func() string {
		for _, l := range strings.Split(r.collectOnce(t), "\n") {
			if strings.HasPrefix(l, `slurm_job_memory_limit_bytes{account="physics",jobid="100"`) {
				return l[strings.LastIndex(l, " ")+1:]
			}
		}
		return "absent"
	}

	set("max") // the job's directory, before slurmstepd set its limit
	if got := limit(); got != "absent" {
		t.Fatalf("unlimited: limit %s, want absent", got)
	}
	set("104857600")
	now = now.Add(10 * time.Second)
	if got := limit(); got != "1.048576e+08" {
		t.Fatalf("10 s later, after slurmstepd set memory.max: limit %s, want 1.048576e+08", got)
	}

	// Settled (past staticTTL): read once more, then cached for staticTTL.
	now = now.Add(staticTTL)
	if got := limit(); got != "1.048576e+08" {
		t.Fatalf("settled: limit %s, want 1.048576e+08", got)
	}
	set("209715200")
	now = now.Add(time.Second)
	if got := limit(); got != "1.048576e+08" {
		t.Fatalf("settled job, a second later: limit %s, want the cached 1.048576e+08", got)
	}
	now = now.Add(staticTTL)
	if got := limit(); got != "2.097152e+08" {
		t.Fatalf("settled job, after staticTTL: limit %s, want 2.097152e+08", got)
	}
}
