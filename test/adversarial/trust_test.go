// SPDX-License-Identifier: Apache-2.0

package adversarial

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jobscope/jobscope/internal/testutil"
)

// What a job can write decides nothing and costs nothing: these cases plant
// it in the node's trees (docs/security.md).

// jobProcess gives job i of a tree one task process, pid, whose environment
// is env, in procfs proc.
func jobProcess(t *testing.T, root, proc string, i, pid int, env string) {
	t.Helper()
	write(t, filepath.Join(jobDir(root, i), "step_0", "user", "task_0", "cgroup.procs"), fmt.Sprintf("%d\n", pid))
	write(t, filepath.Join(proc, fmt.Sprint(pid), "environ"), env)
}

// A job process with 128 KiB SLURM_JOB_USER, SLURM_JOB_ACCOUNT and
// SLURM_JOB_NAME values and a 1 MB props file leave /metrics within 1.1x
// of the same node with ordinary values (6.0 MB and 53.5 MB before: the
// values became labels, the props file was read whole).
func TestOversizeIdentityInputs(t *testing.T) {
	size := func(user, account, name string, props int) int {
		root, args := tree(t, 8)
		proc, propsDir := t.TempDir(), t.TempDir()
		env := "SLURM_JOB_ID=1000\x00SLURM_JOB_USER=" + user + "\x00SLURM_JOB_ACCOUNT=" + account + "\x00SLURM_JOB_NAME=" + name + "\x00"
		jobProcess(t, root, proc, 0, 4242, env)
		write(t, filepath.Join(propsDir, "1001"), "SLURM_JOB_ID=1001\nSLURM_JOB_ACCOUNT="+strings.Repeat("a", props)+"\n")
		n := start(t, nil, append(args, "--path.procfs="+proc, "--slurm.job-props-dir="+propsDir, "--metrics.level=full")...)
		n.mustScrape(10 * time.Second)
		_, body, _ := n.scrape(10 * time.Second) // the second scrape: every counter present
		return len(body)
	}
	base := size("u", "acct", "job", 8)
	big := strings.Repeat("x", 128<<10)
	hostile := size(big, big, big, 1<<20)
	report(t, "oversize identity inputs: /metrics %d bytes with 128 KiB values and a 1 MB props file, %d without (%.3fx)", hostile, base, float64(hostile)/float64(base))
	if float64(hostile) > 1.1*float64(base) {
		t.Errorf("/metrics %d bytes with oversize inputs, %d without: over 1.1x", hostile, base)
	}
}

// A job's cgroup.procs that is a FIFO (opening it waits for a writer)
// holds no scrape: every job is exported within the deadline, and the file
// is counted.
func TestFIFOCgroupProcs(t *testing.T) {
	root, args := tree(t, 16)
	proc := t.TempDir()
	jobProcess(t, root, proc, 1, 4243, "SLURM_JOB_ID=1001\x00")
	fifo(t, filepath.Join(jobDir(root, 0), "step_0", "user", "task_0", "cgroup.procs"))
	n := start(t, nil, append(args, "--path.procfs="+proc)...)
	for i := range 3 {
		status, body, took := n.scrape(3 * time.Second)
		if status != 200 {
			t.Fatalf("scrape %d: status %d after %v", i, status, took)
		}
		s := testutil.Samples(t, []byte(body))
		report(t, "FIFO cgroup.procs: scrape %d: %d of 16 jobs in %v", i, count(s, "slurm_job_info"), took.Round(time.Millisecond))
		if jobs := count(s, "slurm_job_info"); jobs != 16 || took > 3*time.Second {
			t.Errorf("scrape %d: %d of 16 jobs in %v", i, jobs, took)
		}
		if i == 2 && s[`jobscope_collector_errors_total{cause="read_failed",collector="discovery"}`] == 0 {
			t.Error("the FIFO cgroup.procs was not counted")
		}
	}
}

// A job's io.stat that is a symlink to a file of another's exports
// nothing from it, at the full level too (52 device labels from
// /etc/shadow before).
func TestSymlinkedIOStat(t *testing.T) {
	root, args := tree(t, 2)
	target := filepath.Join(t.TempDir(), "secret")
	write(t, target, "253:99 rbytes=7 wbytes=7 rios=7 wios=7 dbytes=0 dios=0\n")
	io := filepath.Join(jobDir(root, 0), "io.stat")
	if err := os.Remove(io); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, io); err != nil {
		t.Fatal(err)
	}
	n := start(t, nil, append(args, "--metrics.level=full")...)
	n.mustScrape(5 * time.Second)
	s, _ := n.mustScrape(5 * time.Second)
	for k := range s {
		if strings.Contains(k, `device="253:99"`) {
			t.Errorf("series from the symlink's target: %s", k)
		}
	}
	if s[`jobscope_collector_errors_total{cause="read_failed",collector="cgroup"}`] == 0 {
		t.Error("the symlinked io.stat was not counted")
	}
	report(t, "symlinked io.stat: no series from its target, read_failed counted")
}
