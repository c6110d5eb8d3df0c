// SPDX-License-Identifier: Apache-2.0

package discovery

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jobscope/jobscope/internal/testutil"
	"github.com/jobscope/jobscope/slurmcli"
)

// jobTree makes n v2 job directories (job_1000...) with one task each.
func jobTree(t testing.TB, n int) string {
	t.Helper()
	root := t.TempDir()
	for i := range n {
		task := filepath.Join(root, "system.slice", "slurmstepd.scope", fmt.Sprintf("job_%d", 1000+i), "step_batch", "user", "task_0")
		if err := os.MkdirAll(task, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// A hung squeue (slurmctld down) never holds up discovery: every pass
// exports all jobs at once, without metadata, while the one squeue run
// hangs in the background; no second run starts meanwhile. Its failure is
// counted, logged once per outage, and retried with a doubling wait; the
// answer, once there, fills the metadata in.
func TestQueueHungSlurm(t *testing.T) {
	clock := testutil.NewClock(time.Unix(1795000000, 0))
	release := make(chan error)
	var calls, returned atomic.Int32
	answer := []slurmcli.NodeJob{{ID: "1000", User: "alice", UID: 1001, Account: "physics", Partition: "p", Name: "x", StartTime: 1794999000}}
	var logs bytes.Buffer
	d := New(Config{
		Layout: Layout{V2: jobTree(t, 128)}, ProcFS: t.TempDir(), Hostname: "node1",
		Now: clock.Now, QueueInterval: 30 * time.Second, QueueTimeout: time.Hour,
		ProcOwner: func(string) (int, bool) { return 0, false },
		Logger:    slog.New(slog.NewTextHandler(&logs, nil)),
		Queue: func(ctx context.Context, req QueueRequest) ([]slurmcli.NodeJob, error) {
			calls.Add(1)
			defer returned.Add(1)
			select {
			case err := <-release:
				if err != nil {
					return nil, err
				}
				return answer, nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		},
	})
	defer d.Close()
	pass := func(wantSource string) {
		t.Helper()
		jobs := d.Discover(t.Context(), nil)
		if len(jobs) != 128 {
			t.Fatalf("exported %d of 128 jobs", len(jobs))
		}
		if jobs[0].Meta.Source != wantSource || jobs[127].Meta.Source != SourceNone {
			t.Fatalf("sources %q %q, want %q, none", jobs[0].Meta.Source, jobs[127].Meta.Source, wantSource)
		}
	}
	for range 5 {
		pass(SourceNone)
		// Past the interval: still the one run, still hanging.
		clock.Add(time.Minute)
	}
	if calls.Load() != 1 || returned.Load() != 0 {
		t.Fatalf("squeue started %d times, returned %d: want one run, hanging", calls.Load(), returned.Load())
	}
	// It fails three times in a row: each wait is twice the one before.
	waits := []time.Duration{}
	for i := range 3 {
		release <- &slurmcli.ExitError{Command: "squeue", Code: 1, Stderr: "slurm_load_jobs error: Unable to contact slurm controller"}
		// The run's end as the queue records it (Runs counts it under the
		// queue's lock, with its backoff): the fake's own return comes
		// before that, and reading the backoff then got the previous one.
		waitFor(t, func() bool { st := d.Status().Queue; return st.Up == 0 && st.Runs == float64(i+1) })
		b := d.Status().Queue.Backoff
		waits = append(waits, b)
		clock.Add(b - time.Second)
		pass(SourceNone)
		if !d.Status().Queue.Running.IsZero() {
			t.Fatalf("squeue ran again %v after a failure, before its %v backoff", b-time.Second, b)
		}
		clock.Add(time.Second)
		pass(SourceNone)
		if d.Status().Queue.Running.IsZero() {
			t.Fatalf("squeue not run again after its backoff")
		}
		waitFor(t, func() bool { return calls.Load() == int32(i+2) })
	}
	if waits[1] != 2*waits[0] || waits[2] != 2*waits[1] || waits[0] < 30*time.Second {
		t.Errorf("backoff %v: want doubling waits from the interval", waits)
	}
	if st := d.Status().Queue; st.Errors[slurmcli.CauseExit] != 3 || st.Runs != 3 {
		t.Errorf("status %+v: want 3 runs, 3 exit errors", st)
	}
	if n := strings.Count(logs.String(), "squeue for job metadata failed"); n != 1 {
		t.Errorf("%d log lines for one outage, want 1:\n%s", n, logs.String())
	}
	// slurmctld is back: the answer fills job 1000 in.
	release <- nil
	waitFor(t, func() bool { return d.Status().Queue.Up == 1 })
	pass(SourceSqueue)
	if !strings.Contains(logs.String(), "answers again") {
		t.Error("no recovery line")
	}
}

// Close kills a squeue in flight and waits for it.
func TestQueueClose(t *testing.T) {
	started := make(chan struct{})
	var ended atomic.Bool
	d := New(Config{Layout: Layout{V2: jobTree(t, 1)}, ProcFS: t.TempDir(), Hostname: "n", QueueTimeout: time.Hour,
		Queue: func(ctx context.Context, req QueueRequest) ([]slurmcli.NodeJob, error) {
			close(started)
			<-ctx.Done()
			ended.Store(true)
			return nil, ctx.Err()
		}})
	d.Discover(t.Context(), nil)
	<-started
	d.Close()
	if !ended.Load() {
		t.Fatal("Close returned before the squeue run ended")
	}
	if st := d.Status().Queue; st.Runs != 0 || len(st.Errors) != 0 {
		t.Errorf("a run killed at shutdown counted as a failure: %+v", st)
	}
}

// waitFor polls a condition the background run sets; the run is released
// by the test, so this waits only for the goroutine to store its result.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for range 10000 {
		if cond() {
			return
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatal("condition never met")
}

// squeue is asked about the nodes whose scopes hold jobs that wait for it:
// a stale scope of another node name (left by a test setup) would make
// squeue refuse the whole list ("Invalid node name").
func TestQueueNodeNames(t *testing.T) {
	root := t.TempDir()
	for _, p := range []string{"ghost_slurmstepd.scope/system", "n7_slurmstepd.scope/job_5/step_0", "slurmstepd.scope/job_6/step_0"} {
		if err := os.MkdirAll(filepath.Join(root, "system.slice", p), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	reqs := make(chan QueueRequest, 1)
	d := New(Config{Layout: Layout{V2: root}, ProcFS: t.TempDir(), Hostname: "host1", ProcOwner: func(string) (int, bool) { return 0, false },
		Queue: func(ctx context.Context, req QueueRequest) ([]slurmcli.NodeJob, error) {
			reqs <- req
			return nil, nil
		}})
	defer d.Close()
	d.Discover(t.Context(), nil)
	if req := <-reqs; strings.Join(req.Nodes, ",") != "host1,n7" || req.SLUID {
		t.Errorf("request %+v, want nodes host1 (no prefix) and n7, not ghost", req)
	}
}

// An answer with some records left out (a job name made to look like
// squeue's output) is still an answer: its jobs fill the metadata in, the
// squeue is up, and the records left out are counted as cause=record.
func TestQueuePartialAnswer(t *testing.T) {
	answer := []slurmcli.NodeJob{{ID: "1000", User: "alice", UID: 1001, Account: "physics"}}
	d := New(Config{
		Layout: Layout{V2: jobTree(t, 2)}, ProcFS: t.TempDir(), Hostname: "node1", QueueTimeout: time.Hour,
		ProcOwner: func(string) (int, bool) { return 0, false },
		Queue: func(ctx context.Context, req QueueRequest) ([]slurmcli.NodeJob, error) {
			return answer, &slurmcli.RefusedError{Command: "squeue", Refused: slurmcli.Refused{Records: 2, First: fmt.Errorf("job %q printed 2 times", "1001")}}
		},
	})
	defer d.Close()
	d.Discover(t.Context(), nil)
	waitFor(t, func() bool { return d.Status().Queue.Runs == 1 })
	st := d.Status().Queue
	if st.Up != 1 || st.Errors[slurmcli.CauseRecord] != 2 || len(st.Errors) != 1 || st.Jobs != 1 {
		t.Fatalf("status %+v", st)
	}
	for _, j := range d.Discover(t.Context(), nil) {
		if j.ID == "1000" && (j.Meta.Source != SourceSqueue || j.Meta.User != "alice") {
			t.Errorf("job 1000: %+v", j.Meta)
		}
		if j.ID == "1001" && j.Meta.Source != SourceNone {
			t.Errorf("job 1001 has metadata from a refused record: %+v", j.Meta)
		}
	}
}
