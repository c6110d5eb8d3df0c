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
	j := &discovery.Job{ID: "7", Version: 2, Dir: dir}
	u := newUsageReader()
	now := time.Unix(1795000000, 0)
	u.now = func() time.Time { return now }
	var serial uint64
	read := func(at time.Duration, want ...int) {
		t.Helper()
		serial++
		now = time.Unix(1795000000, 0).Add(at)
		s := providetest.NewScrape(serial, j)
		if got := u.read(s, j, nil).CPUs; !slices.Equal(got, want) {
			t.Errorf("at %s: cpus %v, want %v", at, got, want)
		}
	}
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
