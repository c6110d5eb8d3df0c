// SPDX-License-Identifier: Apache-2.0

package discovery

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jobscope/jobscope/slurmcli"
)

// What a job's user writes (its processes' environment) never decides who
// owns a job: these tests forge it against the sources that do.

// The node of these tests: uid 1001 is alice, 1002 victim (a user whose
// name a forged environment borrows).
var trustUsers = map[int]string{1001: "alice", 1002: "victim"}

func trustConfig(cg, proc string) Config {
	return Config{Layout: Layout{V2: cg}, ProcFS: proc, Hostname: "n1", RetryAfter: time.Second,
		ProcOwner:  func(string) (int, bool) { return 1001, true }, // the kernel: alice runs the job's processes
		LookupUser: func(uid int) (string, error) { return trustUsers[uid], nil },
	}
}

// addJob adds a v2 job directory named dir (job_<id> or a SLUID) with one
// task process pid whose environment is env.
func addJob(t *testing.T, cg, proc, dir string, pid int, env string) {
	t.Helper()
	task := filepath.Join(cg, "system.slice", "slurmstepd.scope", dir, "step_0", "user", "task_0")
	must(t, os.MkdirAll(task, 0o755))
	must(t, os.WriteFile(filepath.Join(task, "cgroup.procs"), []byte(strconv.Itoa(pid)+"\n"), 0o644))
	must(t, os.MkdirAll(filepath.Join(proc, strconv.Itoa(pid)), 0o755))
	must(t, os.WriteFile(filepath.Join(proc, strconv.Itoa(pid), "environ"), []byte(env), 0o644))
}

// fakeSqueue answers like slurmctld once up is set, and fails before.
type fakeSqueue struct {
	mu   sync.Mutex
	up   bool
	jobs []slurmcli.NodeJob
	runs int
}

func (f *fakeSqueue) run(ctx context.Context, req QueueRequest) ([]slurmcli.NodeJob, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.runs++
	if !f.up {
		return nil, &slurmcli.ExitError{Command: "squeue", Code: 1, Stderr: "Unable to contact slurm controller"}
	}
	return f.jobs, nil
}

func (f *fakeSqueue) setUp() { f.mu.Lock(); f.up = true; f.mu.Unlock() }

func (f *fakeSqueue) count() int { f.mu.Lock(); defer f.mu.Unlock(); return f.runs }

const forged = "SLURM_JOB_USER=victim\x00SLURM_JOB_UID=1002\x00SLURM_JOB_ACCOUNT=chemistry\x00SLURM_JOB_START_TIME=1795000000\x00SLURM_CLUSTER_NAME=c1\x00"

// job_<id> directories (v2 here, v1 in TestForgedEnvironV1): a forged
// environment changes neither id, user nor account while props or squeue
// answer; squeue is asked until it has answered.
func TestForgedEnvironJobID(t *testing.T) {
	cg, proc, props := t.TempDir(), t.TempDir(), t.TempDir()
	addJob(t, cg, proc, "job_10", 4010, "SLURM_JOB_ID=10\x00"+forged)                    // squeue answers for it
	addJob(t, cg, proc, "job_11", 4011, "SLURM_JOB_ID=11\x00"+forged)                    // its props file does
	addJob(t, cg, proc, "job_12", 4012, "SLURM_JOB_ID=4242\x00SLURM_JOB_USER=alice\x00") // names another job
	must(t, os.WriteFile(filepath.Join(props, "11"), []byte("SLURM_JOB_ID=11\nSLURM_JOB_USER=alice\nSLURM_JOB_UID=1001\nSLURM_JOB_ACCOUNT=physics\nSLURM_JOB_START_TIME=1795000000\n"), 0o644))
	sq := &fakeSqueue{up: true, jobs: []slurmcli.NodeJob{{ID: "10", UID: 1001, User: "alice", Account: "physics", Cluster: "c1", StartTime: 1795000000}}}
	cfg := trustConfig(cg, proc)
	cfg.PropsDir, cfg.Queue = props, sq.run
	d := New(cfg)
	defer d.Close()
	d.Discover(t.Context(), nil)
	waitFor(t, func() bool { return d.Status().Queue.Up == 1 })
	jobs := d.Discover(t.Context(), nil)
	if len(jobs) != 3 || jobs[0].ID != "10" || jobs[1].ID != "11" || jobs[2].ID != "12" {
		t.Fatalf("jobs %v", jobs)
	}
	for _, j := range jobs {
		if m := j.Meta; m.User != "alice" || m.UID != 1001 || m.Account == "chemistry" {
			t.Errorf("job %s: %+v: the environment decided its identity", j.ID, m)
		}
	}
	if m := jobs[0].Meta; m.Account != "physics" || m.Source != SourceSqueue {
		t.Errorf("job 10 %+v: want squeue's account, from squeue alone", m)
	}
	if m := jobs[1].Meta; m.Account != "physics" || !strings.HasPrefix(m.Source, SourceProps) {
		t.Errorf("job 11 %+v: want the props file's account", m)
	}
}

// Slurm 26.05's SLUID directories: the directory's name is the authority.
// A forged SLURM_JOB_ID without the directory's SLURM_JOB_SLUID is ignored
// whole; with it, it is a hint that squeue replaces as soon as it answers,
// and never takes a job id squeue or a job_<id> directory gives.
func TestForgedEnvironSLUID(t *testing.T) {
	cg, proc := t.TempDir(), t.TempDir()
	const a, b = "sDVNM87TZNTA00", "sDVNM87TZNTB00"
	addJob(t, cg, proc, a, 4001, "SLURM_JOB_ID=4242\x00"+forged)                          // no SLURM_JOB_SLUID
	addJob(t, cg, proc, b, 4002, "SLURM_JOB_ID=4242\x00SLURM_JOB_SLUID="+b+"\x00"+forged) // names its directory
	addJob(t, cg, proc, "job_4242", 4003, "SLURM_JOB_ID=4242\x00")                        // the real job 4242
	sq := &fakeSqueue{jobs: []slurmcli.NodeJob{
		{ID: "77", SLUID: a, UID: 1001, User: "alice", Account: "physics", StartTime: 1795000000},
		{ID: "78", SLUID: b, UID: 1001, User: "alice", Account: "physics", StartTime: 1795000000},
		{ID: "4242", UID: 1002, User: "victim", Account: "chemistry", StartTime: 1795000000},
	}}
	now := time.Unix(1795001000, 0)
	var mu sync.Mutex
	cfg := trustConfig(cg, proc)
	cfg.Queue, cfg.QueueInterval = sq.run, 30*time.Second
	cfg.Now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	d := New(cfg)
	defer d.Close()
	ids := func(jobs []*Job) string {
		var s []string
		for _, j := range jobs {
			s = append(s, j.ID+"/"+j.SLUID+"/"+j.Meta.User+"/"+j.Meta.Account)
		}
		return strings.Join(s, " ")
	}
	// squeue down: a's environment is ignored (unresolved); b's id 4242 is
	// the environment's, but the directory job_4242 owns that id. Its user
	// is its processes' owner's name.
	jobs := d.Discover(t.Context(), nil)
	waitFor(t, func() bool { return sq.count() == 1 && d.Status().Queue.Up == 0 })
	if got := ids(jobs); got != "4242//alice/" {
		t.Fatalf("squeue down: %s", got)
	}
	sq.setUp()
	mu.Lock()
	now = now.Add(d.Status().Queue.Backoff)
	mu.Unlock()
	d.Discover(t.Context(), nil)
	waitFor(t, func() bool { return d.Status().Queue.Up == 1 })
	jobs = d.Discover(t.Context(), nil)
	if got, want := ids(jobs), "77/"+a+"/alice/physics 78/"+b+"/alice/physics 4242//victim/chemistry"; got != want {
		t.Fatalf("squeue up:\n got %s\nwant %s", got, want)
	}
}

// With squeue down at first, a SLUID directory whose environment names it
// is exported under the environment's job id, marked environ; the first
// pass after squeue answers renames it to squeue's id.
func TestEnvironJobIDCorrectedBySqueue(t *testing.T) {
	cg, proc := t.TempDir(), t.TempDir()
	const s = "sDVNM87TZNTA00"
	addJob(t, cg, proc, s, 4001, "SLURM_JOB_ID=4242\x00SLURM_JOB_SLUID="+s+"\x00SLURM_JOB_USER=alice\x00SLURM_JOB_ACCOUNT=forged\x00")
	sq := &fakeSqueue{jobs: []slurmcli.NodeJob{{ID: "77", SLUID: s, UID: 1001, User: "alice", Account: "physics", StartTime: 1795000000}}}
	now := time.Unix(1795001000, 0)
	var mu sync.Mutex
	cfg := trustConfig(cg, proc)
	cfg.Queue, cfg.QueueInterval = sq.run, 30*time.Second
	cfg.Now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	d := New(cfg)
	defer d.Close()
	j := d.Discover(t.Context(), nil)[0]
	if j.ID != "4242" || j.Meta.Source != SourceEnviron || j.Meta.Account != "" || j.Meta.User != "alice" {
		t.Fatalf("squeue down: %s %+v, want the environment's id marked environ, the owner's name and no account", j.ID, j.Meta)
	}
	waitFor(t, func() bool { return d.Status().Queue.Up == 0 })
	sq.setUp()
	mu.Lock()
	now = now.Add(d.Status().Queue.Backoff)
	mu.Unlock()
	d.Discover(t.Context(), nil) // starts the run that answers
	waitFor(t, func() bool { return d.Status().Queue.Up == 1 })
	j = d.Discover(t.Context(), nil)[0]
	if j.ID != "77" || j.Meta.Source != SourceSqueue || j.Meta.Account != "physics" {
		t.Fatalf("squeue back: %s %+v, want squeue's id and account", j.ID, j.Meta)
	}
}

// With squeue down at first, the environment gives no identity: the user
// is the processes' owner's name, the account empty until squeue, once
// back, gives it. An environment whose user is not the owner's name is
// reported (environ_user_mismatch) and counted.
func TestEnvironUserAgainstUID(t *testing.T) {
	cg, proc := t.TempDir(), t.TempDir()
	addJob(t, cg, proc, "job_10", 4010, "SLURM_JOB_ID=10\x00SLURM_JOB_USER=alice\x00SLURM_JOB_ACCOUNT=hint\x00SLURM_JOB_START_TIME=1795000000\x00")
	addJob(t, cg, proc, "job_11", 4011, "SLURM_JOB_ID=11\x00"+forged)
	sq := &fakeSqueue{jobs: []slurmcli.NodeJob{{ID: "10", UID: 1001, User: "alice", Account: "physics", StartTime: 1795000000}}}
	now := time.Unix(1795001000, 0)
	var mu sync.Mutex
	cfg := trustConfig(cg, proc)
	cfg.Queue, cfg.QueueInterval = sq.run, 30*time.Second
	cfg.Now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	d := New(cfg)
	defer d.Close()
	var problems []string
	problem := func(c string, err error) { problems = append(problems, c) }
	jobs := d.Discover(t.Context(), problem)
	if m := jobs[0].Meta; m.User != "alice" || m.Account != "" || m.Source != SourceEnviron {
		t.Errorf("job 10, squeue down: %+v, want the owner's name, no account, the start time marked environ", m)
	}
	if m := jobs[1].Meta; m.User != "alice" || m.Account != "" || m.UID != 1001 {
		t.Errorf("job 11: %+v, want the owner's name and no account", m)
	}
	if strings.Join(problems, ",") != "environ_user_mismatch" {
		t.Errorf("problems %v, want one environ_user_mismatch", problems)
	}
	waitFor(t, func() bool { return d.Status().Queue.Up == 0 })
	sq.setUp()
	mu.Lock()
	now = now.Add(d.Status().Queue.Backoff)
	mu.Unlock()
	d.Discover(t.Context(), nil)
	waitFor(t, func() bool { return d.Status().Queue.Up == 1 })
	if m := d.Discover(t.Context(), nil)[0].Meta; m.Account != "physics" || m.Source != SourceSqueue {
		t.Errorf("job 10, squeue back: %+v", m)
	}
}

// A job's cgroup.procs that is a FIFO (a planted file: opening it waits for
// a writer) holds no discovery pass: the other jobs are found with their
// metadata at once, and the file is reported.
func TestFIFOProcsDoesNotHoldDiscovery(t *testing.T) {
	cg, proc := t.TempDir(), t.TempDir()
	addJob(t, cg, proc, "job_10", 4010, "SLURM_JOB_ID=10\x00SLURM_JOB_NAME=ok\x00")
	addJob(t, cg, proc, "job_11", 4011, "SLURM_JOB_ID=11\x00SLURM_JOB_NAME=stuck\x00")
	procs := filepath.Join(cg, "system.slice", "slurmstepd.scope", "job_11", "step_0", "user", "task_0", "cgroup.procs")
	must(t, os.Remove(procs))
	must(t, syscall.Mkfifo(procs, 0o644))
	d := New(trustConfig(cg, proc))
	var problems []string
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	done := make(chan []*Job, 1)
	go func() {
		done <- d.Discover(ctx, func(c string, err error) { problems = append(problems, c+": "+err.Error()) })
	}()
	select {
	case jobs := <-done:
		if len(jobs) != 2 || jobs[0].Meta.Name != "ok" {
			t.Errorf("jobs %v", jobs)
		}
		if len(problems) != 1 || !strings.Contains(problems[0], "read_failed: ") || !strings.Contains(problems[0], "job_11") {
			t.Errorf("problems %v, want job_11's cgroup.procs as read_failed", problems)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("discovery held by a FIFO cgroup.procs")
	}
}

// Symlinks planted in a job's tree are not followed: a symlinked task
// directory or cgroup.procs gives none of its target's processes (another
// job's, whose environment would then speak for this one).
func TestSymlinkedProcsNotFollowed(t *testing.T) {
	cg, proc := t.TempDir(), t.TempDir()
	addJob(t, cg, proc, "job_10", 4010, "SLURM_JOB_ID=10\x00")
	addJob(t, cg, proc, "job_11", 4011, "SLURM_JOB_ID=11\x00")
	other := filepath.Join(cg, "system.slice", "slurmstepd.scope", "job_10", "step_0", "user", "task_0")
	user := filepath.Join(cg, "system.slice", "slurmstepd.scope", "job_11", "step_0", "user")
	must(t, os.Symlink(other, filepath.Join(user, "task_1")))
	must(t, os.Symlink(filepath.Join(other, "cgroup.procs"), filepath.Join(user, "cgroup.procs")))
	jobs := New(trustConfig(cg, proc)).Discover(t.Context(), nil)
	if pids := jobs[1].PIDs(); len(pids) != 1 || pids[0] != 4011 {
		t.Errorf("job 11 pids %v, want only its own 4011", pids)
	}
}

// A props file over 256 KiB is an error of that file (read_failed), not
// memory; an environment value over its bound is not used at all, and an
// environment is read up to its bound.
func TestOversizeInputs(t *testing.T) {
	cg, proc, props := t.TempDir(), t.TempDir(), t.TempDir()
	big := strings.Repeat("x", 128<<10)
	addJob(t, cg, proc, "job_10", 4010, "SLURM_JOB_ID=10\x00SLURM_JOB_NAME="+big+"\x00SLURM_JOB_PARTITION=p\x00")
	addJob(t, cg, proc, "job_11", 4011, "SLURM_JOB_ID=11\x00SLURM_JOB_NAME=n11\x00")
	addJob(t, cg, proc, "job_12", 4012, "SLURM_JOB_ID=12\x00SLURM_JOB_PARTITION=p\x00OTHER="+strings.Repeat("y", 300<<10)+"\x00SLURM_JOB_NAME=late\x00")
	must(t, os.WriteFile(filepath.Join(props, "11"), []byte("SLURM_JOB_ACCOUNT=physics\n"+strings.Repeat("#", 1<<20)+"\n"), 0o644))
	cfg := trustConfig(cg, proc)
	cfg.PropsDir = props
	var problems []string
	jobs := New(cfg).Discover(t.Context(), func(c string, err error) { problems = append(problems, c) })
	if m := jobs[0].Meta; m.Name != "" || m.Partition != "p" {
		t.Errorf("job 10: name of %d bytes, partition %q: want no 128 KiB name, the partition kept", len(m.Name), m.Partition)
	}
	if m := jobs[1].Meta; m.Account != "" || m.Name != "n11" {
		t.Errorf("job 11 %+v: a 1 MB props file was used", m)
	}
	if m := jobs[2].Meta; m.Partition != "p" || m.Name != "" {
		t.Errorf("job 12 %+v: want what lies in the first 256 KiB only", m)
	}
	if strings.Join(problems, ",") != "read_failed" {
		t.Errorf("problems %v, want the props file's read_failed", problems)
	}
}

func TestParseStatusUID(t *testing.T) {
	b := []byte("Name:\tsh\nUmask:\t0022\nState:\tS (sleeping)\nUid:\t1001\t0\t0\t0\nGid:\t100\t100\t100\t100\n")
	if uid, ok := parseStatusUID(b); !ok || uid != 1001 {
		t.Errorf("real uid %d %v, want 1001 (the effective uid 0 of a setuid program is not the owner)", uid, ok)
	}
	if _, ok := parseStatusUID([]byte("Uid:\tx\n")); ok {
		t.Error("garbage uid accepted")
	}
}

// cgroup v1: the uid comes from the path (uid_<uid>, root's), the id from
// job_<id>; a forged environment changes neither, nor the user and account
// squeue gives.
func TestForgedEnvironV1(t *testing.T) {
	root, proc := t.TempDir(), t.TempDir()
	task := filepath.Join(root, "cpuacct", "slurm", "uid_1001", "job_10", "step_0", "task_0")
	must(t, os.MkdirAll(task, 0o755))
	must(t, os.WriteFile(filepath.Join(task, "cgroup.procs"), []byte("4010\n"), 0o644))
	must(t, os.MkdirAll(filepath.Join(proc, "4010"), 0o755))
	must(t, os.WriteFile(filepath.Join(proc, "4010", "environ"), []byte("SLURM_JOB_ID=10\x00"+forged), 0o644))
	sq := &fakeSqueue{up: true, jobs: []slurmcli.NodeJob{{ID: "10", UID: 1001, User: "alice", Account: "physics", StartTime: 1795000000}}}
	cfg := trustConfig("", proc)
	cfg.Layout = Layout{V1: map[string]string{"cpuacct": filepath.Join(root, "cpuacct")}}
	cfg.ProcOwner = func(string) (int, bool) { return 1002, true } // never asked: the path gives the uid
	cfg.Queue = sq.run
	d := New(cfg)
	defer d.Close()
	if m := d.Discover(t.Context(), nil)[0].Meta; m.User != "alice" || m.UID != 1001 || m.Account != "" {
		t.Errorf("squeue not yet answered: %+v, want the path's uid's name and no account", m)
	}
	waitFor(t, func() bool { return d.Status().Queue.Up == 1 })
	j := d.Discover(t.Context(), nil)[0]
	if m := j.Meta; j.ID != "10" || m.User != "alice" || m.Account != "physics" || m.Source != SourceSqueue {
		t.Errorf("job %s %+v, want squeue's", j.ID, m)
	}
}
