// SPDX-License-Identifier: Apache-2.0

package discovery

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// A job process whose environ blocks (its mm lock held; here a FIFO)
// delays discovery once by at most environWait, then not at all: the job
// is found without metadata from its environment, and once the read
// returns the environment is read again.
func TestBlockedEnvironDoesNotHoldDiscovery(t *testing.T) {
	cg, proc := v2Job(t, "8", 4242, "")
	environ := filepath.Join(proc, "4242", "environ")
	must(t, syscall.Mkfifo(environ, 0o644))
	owner := func(string) (int, bool) { return 0, true }
	d := New(Config{Layout: Layout{V2: cg}, ProcFS: proc, ProcOwner: owner, RetryAfter: time.Nanosecond})
	for i := range 3 {
		start := time.Now()
		jobs := d.Discover(t.Context(), nil)
		took := time.Since(start)
		if len(jobs) != 1 || jobs[0].ID != "8" || jobs[0].Meta.Source == SourceEnviron {
			t.Fatalf("discovery %d: %+v", i, jobs)
		}
		// The FIFO never gets a writer here: a discovery that waited for
		// the read to return would hang. The bound is loose so that a
		// loaded machine cannot trip it.
		if took > environWait+10*time.Second {
			t.Fatalf("discovery %d took %v with a blocked environ", i, took)
		}
		// Later discoveries do not read the stuck file again (each new
		// read would hold a slot and wait environWait): one read holds one
		// slot, whatever the number of discoveries. Counted, not timed.
		if busy := len(d.environ.slots); busy != 1 {
			t.Fatalf("discovery %d: %d environ reads in flight, want the first one only", i, busy)
		}
	}
	// The read returns (the FIFO gets a writer with the environment): the
	// slot is free again and the next tries read it.
	fd, err := unix.Open(environ, unix.O_WRONLY, 0)
	must(t, err)
	_, _ = unix.Write(fd, []byte("SLURM_JOB_ID=8\x00SLURM_JOB_NAME=physics\x00"))
	unix.Close(fd)
	must(t, os.Remove(environ))
	must(t, os.WriteFile(environ, []byte("SLURM_JOB_ID=8\x00SLURM_JOB_NAME=physics\x00"), 0o644))
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if jobs := d.Discover(t.Context(), nil); jobs[0].Meta.Name == "physics" {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Error("the environment was not read again after the blocked read returned")
}
