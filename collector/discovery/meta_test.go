package discovery

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Metadata order: props, then environ, then scontrol (at most scontrolTries
// times per job), cached across scrapes and dropped with the job.
func TestMetadataOrderAndCache(t *testing.T) {
	root := t.TempDir()
	props := t.TempDir()
	job := filepath.Join(root, "system.slice", "slurmstepd.scope", "job_5")
	if err := os.MkdirAll(job, 0o755); err != nil {
		t.Fatal(err)
	}
	calls := 0
	now := time.Unix(1000, 0)
	d := New(Config{
		Layout: Layout{V2: root}, ProcFS: t.TempDir(), PropsDir: props,
		Scontrol: func(ctx context.Context, id string) (map[string]string, error) {
			calls++
			return nil, errors.New("slurmctld down")
		},
		Now: func() time.Time { return now }, RetryAfter: time.Second,
	})
	var causes []string
	report := func(c string, err error) { causes = append(causes, c) }
	for i := range 10 {
		now = now.Add(2 * time.Second)
		jobs := d.Discover(context.Background(), report)
		if len(jobs) != 1 || jobs[0].Meta.Source != "none" {
			t.Fatalf("scrape %d: %+v", i, jobs)
		}
	}
	if calls != scontrolTries {
		t.Errorf("scontrol ran %d times, want %d", calls, scontrolTries)
	}
	// The prolog file appears: the next retry picks it up.
	_ = os.WriteFile(filepath.Join(props, "5"), []byte("SLURM_JOB_ACCOUNT=acct\nSLURM_JOB_USER=eve\nSLURM_JOB_PARTITION=p\n"), 0o644)
	now = now.Add(2 * time.Second)
	jobs := d.Discover(context.Background(), report)
	if m := jobs[0].Meta; m.Account != "acct" || m.User != "eve" || m.Source != "props" {
		t.Fatalf("props not used: %+v", m)
	}
	// Once complete it is not read again.
	_ = os.WriteFile(filepath.Join(props, "5"), []byte("SLURM_JOB_ACCOUNT=changed\nSLURM_JOB_USER=eve\n"), 0o644)
	now = now.Add(time.Hour)
	if jobs := d.Discover(context.Background(), report); jobs[0].Meta.Account != "acct" {
		t.Error("complete metadata was looked up again")
	}
	// The job ends: its cache entry goes.
	_ = os.RemoveAll(job)
	d.Discover(context.Background(), report)
	if len(d.metas) != 0 {
		t.Errorf("cache keeps %d entries of ended jobs", len(d.metas))
	}
}

func TestScontrolFields(t *testing.T) {
	m := metaFromScontrol(map[string]string{"UserId": "alice(1001)", "Account": "physics", "Partition": "debug", "QOS": "normal", "JobName": "x", "ArrayJobId": "7", "ArrayTaskId": "2"})
	if m.User != "alice" || m.UID != 1001 || m.Account != "physics" || m.ArrayTaskID != "2" {
		t.Errorf("%+v", m)
	}
}

func FuzzParseVars(f *testing.F) {
	f.Add([]byte("SLURM_JOB_ID=2\x00SLURM_JOB_ACCOUNT=physics\x00HOME=/x\x00"), byte(0))
	f.Add([]byte("SLURM_JOB_ID=3\nSLURM_JOB_USER=bob\n"), byte('\n'))
	f.Fuzz(func(t *testing.T, b []byte, sep byte) {
		_ = metaFromVars(parseVars(b, sep), "fuzz")
	})
}

func FuzzMountinfo(f *testing.F) {
	f.Add([]byte(hybridMountinfo))
	f.Add([]byte(combinedV1Mountinfo))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = layoutFromMountinfo(bytesReader(b))
	})
}
