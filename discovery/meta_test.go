// SPDX-License-Identifier: Apache-2.0

package discovery

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/jobscope/jobscope/slurmcli"
)

// v2Job makes a one-job v2 tree with one task process (pid) whose environ
// holds env (NUL-separated records); env "" leaves the process unreadable.
func v2Job(t *testing.T, id string, pid int, env string) (cgroot, proc string) {
	t.Helper()
	cgroot, proc = t.TempDir(), t.TempDir()
	task := filepath.Join(cgroot, "system.slice", "slurmstepd.scope", "job_"+id, "step_batch", "user", "task_0")
	if err := os.MkdirAll(task, 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(proc, strconv.Itoa(pid))
	must(t, os.WriteFile(filepath.Join(task, "cgroup.procs"), []byte(strconv.Itoa(pid)+"\n"), 0o644))
	must(t, os.MkdirAll(p, 0o755))
	if env != "" {
		must(t, os.WriteFile(filepath.Join(p, "environ"), []byte(env), 0o644))
	}
	return cgroot, proc
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// Slurm 24.11's prolog environment has no SLURM_JOB_NAME, SLURM_JOB_QOS or
// SLURM_ARRAY_*: the props file gives what it has, the job's environment
// the rest, field by field; the key is the same as from either alone.
func TestMetadataFieldByField(t *testing.T) {
	const env = "SLURM_JOB_ID=8\x00SLURM_JOB_USER=alice\x00SLURM_JOB_UID=1001\x00SLURM_JOB_ACCOUNT=physics\x00" +
		"SLURM_JOB_PARTITION=debug\x00SLURM_JOB_QOS=normal\x00SLURM_JOB_NAME=arr\x00SLURM_CLUSTER_NAME=c1\x00" +
		"SLURM_ARRAY_JOB_ID=8\x00SLURM_ARRAY_TASK_ID=3\x00SLURM_JOB_START_TIME=1795560396\x00"
	const props = "SLURM_JOB_ID=8\nSLURM_JOB_USER=alice\nSLURM_JOB_UID=1001\nSLURM_JOB_ACCOUNT=physics\n" +
		"SLURM_JOB_PARTITION=debug\nSLURM_CLUSTER_NAME=c1\nSLURM_JOB_START_TIME=1795560396\n"
	cg, proc := v2Job(t, "8", 4242, env)
	propsDir := t.TempDir()
	must(t, os.WriteFile(filepath.Join(propsDir, "8"), []byte(props), 0o644))
	owner := func(string) (int, bool) { return 0, true }

	both := New(Config{Layout: Layout{V2: cg}, ProcFS: proc, PropsDir: propsDir, ProcOwner: owner}).Discover(t.Context(), nil)
	m := both[0].Meta
	if m.Name != "arr" || m.QOS != "normal" || m.ArrayJobID != "8" || m.ArrayTaskID != "3" || m.Account != "physics" || m.Source != "props+environ" {
		t.Errorf("props + environ: %+v", m)
	}
	envOnly := New(Config{Layout: Layout{V2: cg}, ProcFS: proc, ProcOwner: owner}).Discover(t.Context(), nil)[0].Meta
	cgNoEnv, procNoEnv := v2Job(t, "8", 4242, "")
	propsOnly := New(Config{Layout: Layout{V2: cgNoEnv}, ProcFS: procNoEnv, PropsDir: propsDir, ProcOwner: owner,
		LookupUser: func(int) (string, error) { return "alice", nil }}).Discover(t.Context(), nil)[0].Meta
	if envOnly.Source != "environ" || propsOnly.Source != "props" {
		t.Fatalf("sources %q %q", envOnly.Source, propsOnly.Source)
	}
	if m.Key != "c1/8/1795560396" || envOnly.Key != m.Key || propsOnly.Key != m.Key {
		t.Errorf("one job, one key: props+environ %q, environ %q, props %q", m.Key, envOnly.Key, propsOnly.Key)
	}
}

// Slurm prints (null) for a field that is not set (accounting off): an
// absent value is an empty label.
func TestNullIsEmpty(t *testing.T) {
	m := metaFromVars(map[string]string{"SLURM_JOB_ACCOUNT": "(null)", "SLURM_JOB_QOS": "(null)", "SLURM_JOB_NAME": "x"})
	if m.Account != "" || m.QOS != "" || m.Name != "x" {
		t.Errorf("%+v", m)
	}
}

// Files are read at most once per RetryAfter while a job's metadata is
// incomplete; once the environment answered, never again; the cache entry
// goes some time after the job.
func TestMetadataRetryAndSweep(t *testing.T) {
	cg, proc := v2Job(t, "5", 4242, "")
	props := t.TempDir()
	now := time.Unix(1000, 0)
	d := New(Config{Layout: Layout{V2: cg}, ProcFS: proc, PropsDir: props, Now: func() time.Time { return now },
		RetryAfter: 10 * time.Second, ProcOwner: func(string) (int, bool) { return 0, true }})
	discover := func() Meta {
		jobs := d.Discover(t.Context(), func(string, error) {})
		if len(jobs) != 1 {
			t.Fatalf("%d jobs", len(jobs))
		}
		return jobs[0].Meta
	}
	if m := discover(); m.Source != SourceNone {
		t.Fatalf("no source yet: %+v", m)
	}
	must(t, os.WriteFile(filepath.Join(props, "5"), []byte("SLURM_JOB_ACCOUNT=acct\nSLURM_JOB_USER=eve\n"), 0o644))
	now = now.Add(5 * time.Second)
	if m := discover(); m.Source != SourceNone {
		t.Errorf("props read before RetryAfter: %+v", m)
	}
	now = now.Add(5 * time.Second)
	if m := discover(); m.Account != "acct" || m.Source != SourceProps {
		t.Errorf("props not read after RetryAfter: %+v", m)
	}
	env := "SLURM_JOB_ID=5\x00SLURM_JOB_ACCOUNT=other\x00SLURM_JOB_NAME=n\x00"
	must(t, os.WriteFile(filepath.Join(proc, "4242", "environ"), []byte(env), 0o644))
	now = now.Add(10 * time.Second)
	if m := discover(); m.Account != "acct" || m.Name != "n" || m.Source != "props+environ" {
		t.Errorf("props outrank environ, environ fills the rest: %+v", m)
	}
	must(t, os.WriteFile(filepath.Join(props, "5"), []byte("SLURM_JOB_ACCOUNT=changed\nSLURM_JOB_QOS=q\n"), 0o644))
	now = now.Add(time.Hour)
	if m := discover(); m.Account != "acct" || m.QOS != "" {
		t.Errorf("complete metadata was read again: %+v", m)
	}
	must(t, os.RemoveAll(filepath.Join(cg, "system.slice", "slurmstepd.scope", "job_5")))
	d.Discover(t.Context(), nil)
	if len(d.metas) != 1 {
		t.Errorf("an ended job's entry must outlive an overlapping scrape")
	}
	now = now.Add(sweepAfter + time.Second)
	d.Discover(t.Context(), nil)
	if len(d.metas) != 0 {
		t.Errorf("cache keeps %d entries of ended jobs", len(d.metas))
	}
}

func FuzzParseVars(f *testing.F) {
	f.Add([]byte("SLURM_JOB_ID=2\x00SLURM_JOB_ACCOUNT=physics\x00HOME=/x\x00"), byte(0))
	f.Add([]byte("SLURM_JOB_ID=3\nSLURM_JOB_USER=bob\nSLURM_JOB_SLUID=sDVNM87TZNTA00\nSLURM_JOB_START_TIME=1795000000\n"), byte('\n'))
	f.Fuzz(func(t *testing.T, b []byte, sep byte) {
		m := metaFromVars(parseVars(b, sep))
		if m.Account == "(null)" || m.QOS == "(null)" {
			t.Fatal("(null) kept")
		}
	})
}

func FuzzMountinfo(f *testing.F) {
	f.Add([]byte(hybridMountinfo))
	f.Add([]byte(combinedV1Mountinfo))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = layoutFromMountinfo(bytesReader(b))
	})
}

// An environment without SLURM_JOB_START_TIME leaves the job waiting for
// squeue, which gives the start time and so the key.
func TestKeyFromSqueue(t *testing.T) {
	cg, proc := v2Job(t, "3", 4242, "SLURM_JOB_ID=3\x00SLURM_JOB_ACCOUNT=chem\x00SLURM_JOB_USER=bob\x00SLURM_CLUSTER_NAME=c1\x00")
	ran := make(chan struct{}, 1)
	d := New(Config{Layout: Layout{V2: cg}, ProcFS: proc, Hostname: "n1", ProcOwner: func(string) (int, bool) { return 0, true },
		Queue: func(ctx context.Context, req QueueRequest) ([]slurmcli.NodeJob, error) {
			defer func() { ran <- struct{}{} }()
			return []slurmcli.NodeJob{{ID: "3", Account: "other", Cluster: "c1", StartTime: 1795000000}}, nil
		}})
	defer d.Close()
	if m := d.Discover(t.Context(), nil)[0].Meta; m.Key != "" || m.Source != SourceEnviron {
		t.Fatalf("first pass %+v", m)
	}
	<-ran
	waitFor(t, func() bool { return d.Status().Queue.Up == 1 })
	// squeue outranks the environment field by field: the environment's
	// account was a hint, and squeue's replaces it.
	if m := d.Discover(t.Context(), nil)[0].Meta; m.Key != "c1/3/1795000000" || m.Account != "other" || m.Source != "squeue" {
		t.Errorf("second pass %+v", m)
	}
}

// A young job whose environment could not be read at its first scrape
// (its task not yet exec'd, a slow read) gets it at the next scrape, not
// RetryAfter later: otherwise its first scrapes lack the name and then
// have it, one job under two label sets (VM C: a job started after
// slurmd's restart showed name="" for its first 15 s). After youngEnviron,
// the environment waits for RetryAfter again.
func TestYoungJobEnvironRetried(t *testing.T) {
	const env = "SLURM_JOB_ID=5\x00SLURM_JOB_NAME=n\x00"
	for _, c := range []struct {
		name  string
		after time.Duration
		want  string
	}{{"young", 5 * time.Second, "n"}, {"old", youngEnviron + time.Second, ""}} {
		t.Run(c.name, func(t *testing.T) {
			cg, proc := v2Job(t, "5", 4242, "")
			now := time.Unix(1000, 0)
			d := New(Config{Layout: Layout{V2: cg}, ProcFS: proc, Now: func() time.Time { return now },
				RetryAfter: 10 * time.Minute, ProcOwner: func(string) (int, bool) { return 0, true }})
			if jobs := d.Discover(t.Context(), func(string, error) {}); len(jobs) != 1 || jobs[0].Meta.Name != "" {
				t.Fatalf("first scrape: %+v", jobs)
			}
			must(t, os.WriteFile(filepath.Join(proc, "4242", "environ"), []byte(env), 0o644))
			now = now.Add(c.after)
			if m := d.Discover(t.Context(), func(string, error) {})[0].Meta; m.Name != c.want {
				t.Errorf("%v after the first scrape: name %q, want %q (%+v)", c.after, m.Name, c.want, m)
			}
		})
	}
}
