// SPDX-License-Identifier: Apache-2.0

package jobcgroup

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/jobscope/jobscope/collector/provide/providetest"
	"github.com/jobscope/jobscope/discovery"
)

// TestCpusetReadUntilSettled: a job's directory exists before Slurm writes
// its cpuset, so the first reads see the parent's cores. In VM A a pinned
// job (cpuset 3) was first read as 0-3 and kept that for the cache's minute:
// per-core series on cores it was never given. A young job's cpuset is
// read at every scrape; a settled one still comes from the cache.
func TestCpusetReadUntilSettled(t *testing.T) {
	dir := t.TempDir()
	write := func(cpus string) {
		if err := os.WriteFile(filepath.Join(dir, "cpuset.cpus.effective"), []byte(cpus+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	read := cpusetReader(t, &discovery.Job{ID: "7", Version: 2, Dir: dir})
	write("0-3") // the parent's, before Slurm sets the job's
	read(0, 0, 1, 2, 3)
	write("3")
	read(5*time.Second, 3)
	read(30*time.Second, 3)
	write("2")              // an admin's change, picked up within a minute
	read(61*time.Second, 3) // settled: the read at 30 s serves
	read(85*time.Second, 3)
	read(95*time.Second, 2)
}

// TestCpusetNotYetWritten: on cgroup v2 a job's own cpuset.cpus is empty
// until Slurm writes it, and its effective set is the parent's. A young
// job has no cpus then (VM B: a one-core job's first scrape said 4, and
// max_over_time kept it in its report and summary); once written, the
// effective set counts. A job whose own set stays empty past cpusetTTL is
// not constrained: its effective set is its cores.
func TestCpusetNotYetWritten(t *testing.T) {
	dir := t.TempDir()
	write := func(name, cpus string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(cpus+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	read := cpusetReader(t, &discovery.Job{ID: "8", Version: 2, Dir: dir})
	write("cpuset.cpus.effective", "0-3")
	write("cpuset.cpus", "")
	read(0) // not written yet: no cpus
	write("cpuset.cpus", "1")
	write("cpuset.cpus.effective", "1")
	read(2*time.Second, 1)

	// Never constrained: the effective set once the job is settled.
	dir = t.TempDir()
	read = cpusetReader(t, &discovery.Job{ID: "9", Version: 2, Dir: dir})
	write("cpuset.cpus.effective", "0-3")
	write("cpuset.cpus", "")
	read(3 * time.Second) // its first scrape
	read(62 * time.Second)
	read(64*time.Second, 0, 1, 2, 3)
}

// cpusetReader reads j's cpus through a fresh usage reader at a time after
// a fixed start, each read a new scrape, and checks them: want nil is no
// cpus at all (no HasCPUs).
func cpusetReader(t *testing.T, j *discovery.Job) func(at time.Duration, want ...int) {
	u := newUsageReader()
	start := time.Unix(1795000000, 0)
	now := start
	u.now = func() time.Time { return now }
	var serial uint64
	return func(at time.Duration, want ...int) {
		t.Helper()
		serial++
		now = start.Add(at)
		us := u.read(providetest.NewScrape(serial, j), j, nil)
		if got := us.CPUs; !slices.Equal(got, want) || (us.Has&HasCPUs != 0) != (want != nil) {
			t.Errorf("at %s: cpus %v (has %v), want %v", at, got, us.Has&HasCPUs != 0, want)
		}
	}
}
