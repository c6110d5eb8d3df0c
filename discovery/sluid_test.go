// SPDX-License-Identifier: Apache-2.0

package discovery

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jobscope/jobscope/slurmcli"
)

// sluidFixture is testdata/node-v2-sluid: a Slurm 26.05 node with the
// layout measured in a forky VM (<node>_slurmstepd.scope, SLUID job
// directories, user/task_special) next to a job_<id> directory of
// CgroupJobIdPaths=yes, an unresolvable SLUID directory, a job-shaped
// directory of an unknown scheme and a directory that is no job.
func sluidFixture(t *testing.T, cfg Config) *Discoverer {
	t.Helper()
	root := filepath.Join("..", "testdata", "node-v2-sluid")
	cfg.Layout = Layout{V2: filepath.Join(root, "cgroup")}
	cfg.ProcFS = filepath.Join(root, "proc")
	if cfg.PropsDir == "" {
		cfg.PropsDir = filepath.Join(root, "props")
	}
	cfg.ProcOwner = func(string) (int, bool) { return 0, true }
	cfg.LookupUser = func(uid int) (string, error) { return map[int]string{1001: "alice", 1002: "bob"}[uid], nil }
	return New(cfg)
}

func TestSLUIDLayout(t *testing.T) {
	d := sluidFixture(t, Config{})
	var problems []string
	jobs, st := d.DiscoverStats(t.Context(), func(c string, err error) { problems = append(problems, c+": "+err.Error()) })
	type want struct{ id, sluid, dir, key, source, account, qos, name, array string }
	wants := []want{
		{"7", "sDVNM87TZNTA00", "sDVNM87TZNTA00", "sDVNM87TZNTA00", "props+environ", "physics", "normal", "sweep", "6_1"},
		{"8", "sDVNM87TZNTB00", "sDVNM87TZNTB00", "sDVNM87TZNTB00", "environ", "", "", "train", "_"},
		{"9", "sDVNM8A1Q2R3S4", "job_9", "sDVNM8A1Q2R3S4", "props", "chemistry", "high", "md", "_"},
	}
	if len(jobs) != len(wants) {
		t.Fatalf("found %d jobs, want %d: %v", len(jobs), len(wants), jobs)
	}
	for i, w := range wants {
		j := jobs[i]
		m := j.Meta
		got := want{j.ID, m.SLUID, filepath.Base(j.Dir), m.Key, m.Source, m.Account, m.QOS, m.Name, m.ArrayJobID + "_" + m.ArrayTaskID}
		if got != w {
			t.Errorf("job %d:\n got %+v\nwant %+v", i, got, w)
		}
	}
	// task_special belongs to step 0 of job 7: its process is the job's.
	if pids := jobs[0].PIDs(); !slices.Equal(pids, []int{2901, 2902, 2903, 7090, 7100, 7101, 7102}) {
		t.Errorf("job 7 pids %v, want the slurm/, task_0 and task_special processes", pids)
	}
	if len(problems) != 0 {
		t.Errorf("problems: %v", problems)
	}
	wantDirs := map[string]int{SchemeJobID: 1, SchemeSLUID: 3, SchemeUnknown: 1}
	for _, s := range Schemes {
		if st.Dirs[s] != wantDirs[s] {
			t.Errorf("dirs by scheme %v, want %v", st.Dirs, wantDirs)
			break
		}
	}
	if st.Skipped[SkipUnresolved] != 1 || st.Skipped[SkipUnknownScheme] != 1 || len(st.Skipped) != 2 {
		t.Errorf("skipped %v, want one unresolved SLUID and one unknown scheme", st.Skipped)
	}
	if len(st.Scopes) != 1 || !strings.HasSuffix(st.Scopes[0], "vm_slurmstepd.scope") {
		t.Errorf("scopes %v", st.Scopes)
	}
	// Counted per pass, logged once: a second pass adds to the totals.
	d.Discover(t.Context(), func(string, error) {})
	if tot := d.Status().Skipped; tot[SkipUnresolved] != 2 || tot[SkipUnknownScheme] != 2 {
		t.Errorf("skip totals %v after two passes", tot)
	}
}

// The background squeue resolves a SLUID no file gives, and is asked for
// SLUIDs (JSON) only while one waits.
func TestSLUIDFromSqueue(t *testing.T) {
	var reqs []QueueRequest
	done := make(chan struct{}, 4)
	now := time.Unix(1795001000, 0)
	d := sluidFixture(t, Config{
		Now: func() time.Time { return now },
		Queue: func(ctx context.Context, req QueueRequest) ([]slurmcli.NodeJob, error) {
			reqs = append(reqs, req)
			defer func() { done <- struct{}{} }()
			return []slurmcli.NodeJob{{ID: "12", SLUID: "sDVNM87V3K9PQ0", User: "carol", UID: 1003, Account: "bio", StartTime: 1795000600},
				{ID: "8", SLUID: "sDVNM87TZNTB00", User: "bob", UID: 1002, StartTime: 1795000400}}, nil
		},
	})
	defer d.Close()
	jobs := d.Discover(t.Context(), func(string, error) {})
	if len(jobs) != 3 {
		t.Fatalf("first pass: %d jobs", len(jobs))
	}
	<-done
	if len(reqs) != 1 || !reqs[0].SLUID || !slices.Equal(reqs[0].Nodes, []string{"vm"}) {
		t.Fatalf("squeue requests %+v: want one, for node vm (the scope's prefix), with SLUIDs", reqs)
	}
	jobs = d.Discover(t.Context(), func(string, error) {})
	if len(jobs) != 4 || jobs[3].ID != "12" || jobs[3].SLUID != "sDVNM87V3K9PQ0" || jobs[3].Meta.Source != "squeue" || jobs[3].Meta.Account != "bio" {
		t.Fatalf("second pass: %+v", jobs[len(jobs)-1])
	}
}

// The props file the prolog links under the SLUID resolves the job id
// even when no process of the job can be read.
func TestSLUIDFromPropsLink(t *testing.T) {
	props := t.TempDir()
	if err := os.WriteFile(filepath.Join(props, "12"), []byte("SLURM_JOB_ID=12\nSLURM_JOB_SLUID=sDVNM87V3K9PQ0\nSLURM_JOB_ACCOUNT=bio\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("12", filepath.Join(props, "sDVNM87V3K9PQ0")); err != nil {
		t.Fatal(err)
	}
	d := sluidFixture(t, Config{PropsDir: props})
	jobs := d.Discover(t.Context(), func(string, error) {})
	ids := []string{}
	for _, j := range jobs {
		ids = append(ids, j.ID)
	}
	// Jobs 7 and 8 resolve from their processes' environments.
	if !slices.Equal(ids, []string{"7", "8", "9", "12"}) || jobs[3].Meta.Account != "bio" || jobs[3].Meta.Source != "props" {
		t.Fatalf("ids %v, job 12 %+v", ids, jobs[len(jobs)-1].Meta)
	}
	if d.Status().Skipped[SkipUnresolved] != 0 {
		t.Error("nothing may wait for a job id")
	}
}
