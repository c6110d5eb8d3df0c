// SPDX-License-Identifier: Apache-2.0

package adversarial

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// faults are Slurm commands gone wrong: each is a shell script body run
// instead of squeue (after a good answer, in controller mode).
var faults = []struct{ name, script string }{
	{"garbage", "head -c 20000 /dev/urandom"},
	{"empty", "exit 0"},
	{"exit 1", "echo 'slurm_load_jobs error: Unable to contact slurm controller (connect failure)' >&2; exit 1"},
	{"hang", "exec sleep 3600"},
	{"200 MB", "head -c 200000000 /dev/zero | tr '\\0' x"},
	{"grandchild holds stdout", "sleep 3600 &\necho partial"},
	// Slower than either test's command timeout (3 s and 4 s), yet finite.
	{"6 s latency", "sleep 6; exit 1"},
}

// marker tags every process a node starts (through its environment), so
// that none can hide from the check that they are all gone.
func marker(t *testing.T) string {
	return "JOBSCOPE_ADVERSARIAL=" + strconv.Itoa(os.Getpid()) + "-" + strings.ReplaceAll(t.Name(), "/", "_")
}

// leftBehind lists the processes still carrying m in their environment.
func leftBehind(m string) []int {
	var pids []int
	dirs, _ := filepath.Glob("/proc/[0-9]*/environ")
	for _, d := range dirs {
		b, err := os.ReadFile(d)
		if err != nil || !strings.Contains(string(b), m+"\x00") {
			continue
		}
		pid, _ := strconv.Atoi(strings.Split(d, "/")[2])
		pids = append(pids, pid)
	}
	return pids
}

// stop sends SIGTERM and waits for the node to exit; then no process it
// started may be left.
func (n *node) stopClean(m string) {
	n.t.Helper()
	_ = n.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-n.exited:
	case <-time.After(5 * time.Second):
		n.t.Fatal("jobscope did not exit within 5 s of SIGTERM")
	}
	deadline := time.Now().Add(3 * time.Second)
	for len(leftBehind(m)) > 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if left := leftBehind(m); len(left) > 0 {
		n.t.Errorf("processes left behind: %v", left)
		for _, p := range left {
			_ = syscall.Kill(p, syscall.SIGKILL)
		}
	}
}

func script(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	write(t, p, "#!/bin/sh\n"+body+"\n")
	if err := os.Chmod(p, 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// Node mode: the background squeue that fills job metadata misbehaves.
// Scrapes stay as fast as without Slurm, export every job (without
// metadata), the RSS stays bounded, and no process is left behind.
//
// "As fast" is judged against what a scrape that waited for squeue would
// take, not against a baseline of three scrapes: a hanging run lasts the
// 3 s squeue timeout and scrapes come every 0.5 s, so a waiting scrape
// takes 2.5 s or more, while one that does not wait takes tens of
// milliseconds. The old bound (twice the baseline plus 0.5 s) failed
// whenever the machine's load rose between the baseline and the faults.
func TestNodeSlurmFaults(t *testing.T) {
	_, args := tree(t, 32)
	base := start(t, nil, args...)
	var baseline time.Duration
	for range 3 {
		_, took := base.mustScrape(5 * time.Second)
		baseline = max(baseline, took)
	}
	report(t, "node mode without Slurm: slowest of 3 scrapes %v", baseline.Round(time.Millisecond))
	for _, f := range faults {
		t.Run(f.name, func(t *testing.T) {
			m := marker(t)
			squeue := script(t, t.TempDir(), "squeue", f.script)
			n := start(t, []string{m}, append(args, "--slurm.node-metadata.squeue=true", "--slurm.node-metadata.squeue-command="+squeue,
				"--slurm.node-metadata.interval=1s", "--slurm.node-metadata.timeout=3s")...)
			var slowest time.Duration
			peak := 0
			for i := range 8 { // about 4 s: several squeue runs, timeouts and back-offs
				s, took := n.mustScrape(5 * time.Second)
				slowest = max(slowest, took)
				peak = max(peak, rssKiB(t, n.cmd.Process.Pid))
				if jobs := count(s, "slurm_job_info"); jobs != 32 {
					t.Fatalf("scrape %d: %d of 32 jobs", i, jobs)
				}
				time.Sleep(500 * time.Millisecond)
			}
			report(t, "node mode, squeue %s: slowest scrape %v (without Slurm %v), peak RSS %d KiB", f.name, slowest.Round(time.Millisecond), baseline.Round(time.Millisecond), peak)
			if slowest > 1500*time.Millisecond {
				t.Errorf("slowest scrape %v, without Slurm %v: a scrape waited for squeue", slowest, baseline)
			}
			if peak > 100<<10 {
				t.Errorf("peak RSS %d KiB", peak)
			}
			n.stopClean(m)
		})
	}
}

// Controller mode: squeue answers once, then misbehaves. Every scrape
// keeps serving the last good snapshot, marked stale (jobscope_slurm_up 0,
// its age growing), no scrape but the first after the fault waits for the
// command, and no process is left behind.
//
// The times leave room for a loaded machine: the command timeout is 4 s
// and a scrape's deadline 10 s, so the scrape that waits out the command
// takes 4 s, one served at once (250 ms at most, WaitFailing) stays far
// under the 2 s that counts as waiting, and one that waited past the
// command timeout would take the scrape's 9 s share. With a 2 s timeout
// and a 1 s line, the 200 MB fault's CPU-heavy runs left little room.
func TestControllerSlurmFaults(t *testing.T) {
	good, err := filepath.Abs(filepath.Join("..", "..", "testdata", "slurm", "22.05", "squeue-running.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range faults {
		t.Run(f.name, func(t *testing.T) {
			m := marker(t)
			bin := t.TempDir()
			bad := filepath.Join(bin, "bad")
			script(t, bin, "squeue", fmt.Sprintf("if [ -e %s ]; then\n%s\nfi\ncat %s", bad, f.script, good))
			n := start(t, []string{m}, "--mode=controller", "--slurm.bin-dir="+bin, "--slurm.poll-interval=1s",
				"--slurm.command-timeout=4s", "--slurm.format=json", "--slurm.max-age=0",
				"--collector.slurm_nodes=false", "--collector.slurm_fairshare=false", "--collector.slurm_scheduler=false",
				"--collector.slurm_sacct=false", "--collector.slurm_node=false", "--collector.slurm_queue_wait=false",
				"--collector.slurm_reservations=false", "--collector.slurm_licenses=false")
			var fresh map[string]float64
			for range 20 {
				s, _ := n.mustScrape(5 * time.Second)
				if s[`jobscope_slurm_up{source="jobs"}`] == 1 {
					fresh = s
					break
				}
				time.Sleep(100 * time.Millisecond)
			}
			if fresh == nil {
				t.Fatal("no good snapshot to start from")
			}
			write(t, bad, "")
			// The scrape that starts the first failing run cannot know the
			// command will hang and waits for it (up to the command timeout);
			// once a run has failed, scrapes wait 250 ms at most.
			var slowest time.Duration
			waited := 0
			var last map[string]float64
			for range 8 {
				time.Sleep(500 * time.Millisecond)
				s, took := n.mustScrape(10 * time.Second)
				slowest = max(slowest, took)
				if took > 2*time.Second {
					waited++
				}
				last = s
			}
			age := last[`jobscope_slurm_snapshot_age_seconds{source="jobs"}`]
			report(t, "controller mode, squeue %s: slowest scrape %v, scrapes over 2 s %d of 8, snapshot age %.1f s, up %v, jobs series %d (fresh %d)",
				f.name, slowest.Round(time.Millisecond), waited, age, last[`jobscope_slurm_up{source="jobs"}`],
				countPrefix(last, "slurm_"), countPrefix(fresh, "slurm_"))
			if last[`jobscope_slurm_up{source="jobs"}`] != 0 || age < 2 {
				t.Errorf("stale snapshot not marked: up %v, age %v", last[`jobscope_slurm_up{source="jobs"}`], age)
			}
			if countPrefix(last, "slurm_") != countPrefix(fresh, "slurm_") {
				t.Errorf("the last snapshot is not served: %d cluster series, %d when fresh", countPrefix(last, "slurm_"), countPrefix(fresh, "slurm_"))
			}
			if slowest > 6*time.Second {
				t.Errorf("a scrape waited %v, past the command timeout", slowest)
			}
			if waited > 1 {
				t.Errorf("%d scrapes waited over 2 s: only the one that started the first failing run may", waited)
			}
			n.stopClean(m)
		})
	}
}

func countPrefix(s map[string]float64, prefix string) int {
	n := 0
	for k := range s {
		if strings.HasPrefix(k, prefix) {
			n++
		}
	}
	return n
}
