// SPDX-License-Identifier: Apache-2.0

package gpus

import (
	"context"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/jobscope/jobscope/collector/provide"
	"github.com/jobscope/jobscope/collector/provide/providetest"
	"github.com/jobscope/jobscope/discovery"
	"github.com/jobscope/jobscope/gpu"
)

// What a job's processes' environments said about its GPUs is kept in the
// job's state between scrapes (each environ is read once) and goes with
// the job, by the one grace rule of per-job state.
func TestGPUEnvStateFollowsJobs(t *testing.T) {
	f, err := gpu.OpenFake(filepath.Join("..", "..", "..", "testdata", "gpu", "dcgm-fake.json"))
	if err != nil {
		t.Fatal(err)
	}
	snap, _ := f.Snapshot(context.Background())
	dcgm := gpu.NewFake("dcgm", *snap)
	root := filepath.Join("..", "..", "..", "testdata", "gpu", "node-v2")
	src := New()
	src.Opts = Options{Backend: "auto", MappingDir: filepath.Join(root, "mapping"), Open: func(cfg gpu.Config) (gpu.Backend, error) {
		cfg.OpenDCGM = func(*slog.Logger) (gpu.Backend, error) { return dcgm, nil }
		return gpu.Open(cfg)
	}}
	if err := src.Start(&provide.Env{ProcFS: filepath.Join(root, "proc")}); err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	jobs := []*discovery.Job{{ID: "300", Version: 2, Dir: "/x/job_300"}, {ID: "301", Version: 2, Dir: "/x/job_301"}}
	read := func(serial uint64, jobs []*discovery.Job) {
		if _, err := src.Read(providetest.NewScrape(serial, jobs...)); err != nil {
			t.Fatal(err)
		}
	}
	read(1, jobs)
	read(2, jobs)
	if n := src.seen.Len(); n != 2 {
		t.Fatalf("%d jobs' environment state, want 2", n)
	}
	for s := uint64(3); s < 2+provide.StateGrace; s++ {
		read(s, nil)
	}
	if n := src.seen.Len(); n != 2 {
		t.Fatalf("state dropped %d scrapes after the jobs ended, before the grace", provide.StateGrace-1)
	}
	read(2+provide.StateGrace, nil)
	if n := src.seen.Len(); n != 0 {
		t.Errorf("%d ended jobs' state kept", n)
	}
}

// Collectors of one scrape share one reading: the second Read of a scrape
// does not ask the backend again.
func TestReadOncePerScrape(t *testing.T) {
	f, err := gpu.OpenFake(filepath.Join("..", "..", "..", "testdata", "gpu", "demo.json"))
	if err != nil {
		t.Fatal(err)
	}
	src := New()
	src.Opts = Options{Backend: "fake", Open: func(gpu.Config) (gpu.Backend, error) { return f, nil }}
	if err := src.Start(&provide.Env{}); err != nil {
		t.Fatal(err)
	}
	s := providetest.NewScrape(1)
	a, err := src.Read(s)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := src.Read(s); a != b {
		t.Error("two readings in one scrape")
	}
	if c, _ := src.Read(providetest.NewScrape(2)); c == a {
		t.Error("the next scrape got the last one's reading")
	}
}
