// SPDX-License-Identifier: Apache-2.0

package discovery

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/jobscope/jobscope/internal/testutil"
	"github.com/jobscope/jobscope/slurmcli"
)

// labelsOf records the (user, account) pairs each job id was exported with.
func labelsOf(seen map[string]map[string]bool, jobs []*Job) {
	for _, j := range jobs {
		if seen[j.ID] == nil {
			seen[j.ID] = map[string]bool{}
		}
		seen[j.ID][j.Meta.User+"/"+j.Meta.Account] = true
	}
}

// squeue answers; a job that starts after its latest answer forges
// SLURM_JOB_ACCOUNT. The environment never gives the account, and the job
// is held until the next answer gives it: it is exported with one user and
// account for its life (the reviewer's repro labelled it victims-grant for
// up to 30 s, then flipped).
func TestNewJobHeldUntilSqueueAnswers(t *testing.T) {
	cg, proc := t.TempDir(), t.TempDir()
	addJob(t, cg, proc, "job_10", 4010, "SLURM_JOB_ID=10\x00SLURM_JOB_USER=alice\x00SLURM_JOB_ACCOUNT=physics\x00")
	sq := &fakeSqueue{up: true, jobs: []slurmcli.NodeJob{{ID: "10", UID: 1001, User: "alice", Account: "physics", StartTime: 1795000000}}}
	clock := testutil.NewClock(time.Unix(1795001000, 0))
	cfg := trustConfig(cg, proc)
	cfg.Queue, cfg.QueueInterval, cfg.Now = sq.run, 30*time.Second, clock.Now
	d := New(cfg)
	defer d.Close()
	seen := map[string]map[string]bool{}
	labelsOf(seen, d.Discover(t.Context(), nil))
	waitFor(t, func() bool { return d.Status().Queue.Up == 1 })

	clock.Add(time.Second)
	addJob(t, cg, proc, "job_11", 4011, "SLURM_JOB_ID=11\x00SLURM_JOB_USER=alice\x00SLURM_JOB_ACCOUNT=victims-grant\x00")
	sq.mu.Lock()
	sq.jobs = append(sq.jobs, slurmcli.NodeJob{ID: "11", UID: 1001, User: "alice", Account: "physics", StartTime: 1795001000})
	sq.mu.Unlock()
	jobs, st := d.DiscoverStats(t.Context(), nil)
	labelsOf(seen, jobs)
	if len(jobs) != 1 || st.Held != 1 {
		t.Errorf("squeue up, job 11 new: %d jobs, %d held; want job 11 held", len(jobs), st.Held)
	}
	clock.Add(29 * time.Second) // the next run is due: this pass starts it
	labelsOf(seen, d.Discover(t.Context(), nil))
	waitFor(t, func() bool { return sq.count() == 2 && d.Status().Queue.Running.IsZero() })
	jobs = d.Discover(t.Context(), nil)
	labelsOf(seen, jobs)
	if len(jobs) != 2 || jobs[1].Meta.Source != SourceSqueue {
		t.Fatalf("after squeue's answer: %v", jobs)
	}
	if len(seen["11"]) != 1 || !seen["11"]["alice/physics"] {
		t.Errorf("job 11 exported as %v, want only alice/physics", seen["11"])
	}
}

// The hold is bounded: it ends when squeue fails, and when squeue hangs,
// after holdFor. The job is then exported with the owner's name and no
// account (the environment's is never taken).
func TestHoldEnds(t *testing.T) {
	for _, hang := range []bool{false, true} {
		cg, proc := t.TempDir(), t.TempDir()
		addJob(t, cg, proc, "job_10", 4010, "SLURM_JOB_ID=10\x00")
		clock := testutil.NewClock(time.Unix(1795001000, 0))
		var mu sync.Mutex
		runs, release := 0, make(chan struct{})
		defer close(release)
		cfg := trustConfig(cg, proc)
		cfg.QueueInterval, cfg.Now = 30*time.Second, clock.Now
		cfg.Queue = func(ctx context.Context, req QueueRequest) ([]slurmcli.NodeJob, error) {
			mu.Lock()
			runs++
			n := runs
			mu.Unlock()
			switch {
			case n == 1:
				return []slurmcli.NodeJob{{ID: "10", UID: 1001, User: "alice", Account: "physics"}}, nil
			case hang:
				select {
				case <-release:
				case <-ctx.Done():
				}
				return nil, ctx.Err()
			}
			return nil, &slurmcli.ExitError{Command: "squeue", Code: 1}
		}
		d := New(cfg)
		d.Discover(t.Context(), nil)
		waitFor(t, func() bool { return d.Status().Queue.Up == 1 })
		addJob(t, cg, proc, "job_11", 4011, "SLURM_JOB_ID=11\x00SLURM_JOB_USER=alice\x00SLURM_JOB_ACCOUNT=victims-grant\x00")
		clock.Add(30 * time.Second)
		if jobs := d.Discover(t.Context(), nil); len(jobs) != 1 {
			t.Fatalf("hang=%v: job 11 not held at first: %v", hang, jobs)
		}
		if hang {
			waitFor(t, func() bool { return !d.Status().Queue.Running.IsZero() })
			clock.Add(d.holdFor())
		} else {
			waitFor(t, func() bool { return d.Status().Queue.Up == 0 })
		}
		jobs := d.Discover(t.Context(), nil)
		if len(jobs) != 2 || jobs[1].Meta.User != "alice" || jobs[1].Meta.Account != "" {
			t.Errorf("hang=%v: %v, want job 11 exported, alice, no account", hang, jobs)
		}
		d.Close()
	}
}

// --slurm.node-metadata.format=text on Slurm 26.05: squeue's text output
// has no SLUIDs, so it can never confirm a SLUID directory's job id taken
// from the environment. Once squeue has answered, that id is refused (the
// directory is unresolved) instead of lasting the job's life, forged or not.
func TestEnvironJobIDRefusedWhenSqueueCannotConfirm(t *testing.T) {
	cg, proc := t.TempDir(), t.TempDir()
	const s = "sDVNM87TZNTA00"
	addJob(t, cg, proc, s, 4001, "SLURM_JOB_ID=4242\x00SLURM_JOB_SLUID="+s+"\x00SLURM_JOB_USER=alice\x00SLURM_JOB_ACCOUNT=victims-grant\x00")
	// The job is really 77; text records carry no SLUID.
	sq := &fakeSqueue{jobs: []slurmcli.NodeJob{{ID: "77", UID: 1001, User: "alice", Account: "physics"}, {ID: "4242", UID: 1002, User: "victim", Account: "victims-grant"}}}
	clock := testutil.NewClock(time.Unix(1795001000, 0))
	cfg := trustConfig(cg, proc)
	cfg.Queue, cfg.QueueInterval, cfg.Now = sq.run, 30*time.Second, clock.Now
	d := New(cfg)
	defer d.Close()
	jobs := d.Discover(t.Context(), nil)
	if len(jobs) != 1 || jobs[0].ID != "4242" || jobs[0].Meta.Account != "" || jobs[0].Meta.Source != SourceEnviron {
		t.Fatalf("squeue down: %v, want the environment's id as a hint, no account", jobs)
	}
	waitFor(t, func() bool { return d.Status().Queue.Up == 0 })
	sq.setUp()
	clock.Add(d.Status().Queue.Backoff)
	d.Discover(t.Context(), nil)
	waitFor(t, func() bool { return d.Status().Queue.Up == 1 })
	for range 3 {
		clock.Add(time.Minute)
		jobs, st := d.DiscoverStats(t.Context(), nil)
		if len(jobs) != 0 || st.Skipped[SkipUnresolved] != 1 {
			t.Fatalf("squeue answered without SLUIDs: %v (skipped %v), want the directory unresolved", jobs, st.Skipped)
		}
	}
}
