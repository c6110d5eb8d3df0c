// SPDX-License-Identifier: Apache-2.0

package main

import (
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/spf13/pflag"

	"github.com/jobscope/jobscope/collector"
	fixturegen "github.com/jobscope/jobscope/test/gen/fixture"
)

// hungSlurm puts a squeue and an scontrol that hang (slurmctld
// unreachable) first in PATH; each records its pid in dir/started.
func hungSlurm(t testing.TB) (started string) {
	t.Helper()
	dir := t.TempDir()
	started = filepath.Join(dir, "started")
	for _, name := range []string{"squeue", "scontrol"} {
		script := "#!/bin/sh\necho $$ >>" + started + "\nexec sleep 3600\n"
		if err := os.WriteFile(filepath.Join(dir, name), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", dir+":"+os.Getenv("PATH"))
	return started
}

// node128 is the generated 128-job v2 tree, without props or processes:
// no job's metadata is at hand, so every job waits for squeue.
func node128(t testing.TB) []string {
	t.Helper()
	root, err := os.MkdirTemp(fixturegen.BenchDir(), "jobscope-hung-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	if err := fixturegen.V2Node(root, 128); err != nil {
		t.Fatal(err)
	}
	return []string{"--path.cgroupfs=" + root, "--path.procfs=" + t.TempDir(), "--path.sysfs=" + t.TempDir(),
		"--slurm.job-props-dir=" + t.TempDir(), "--collector.ebpf=false", "--collector.gpu=false", "--collector.power=false"}
}

func startNode(t testing.TB, args []string) (*httptest.Server, func()) {
	t.Helper()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	o, set := registerAll(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	logger, _ := newLogger("error", "json", io.Discard)
	exp, release, err := buildExporter(o, set, collector.ModeNode, logger)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(newMux(exp, o, logger))
	t.Cleanup(func() { srv.Close(); release() })
	return srv, release
}

// With slurmctld unreachable (squeue and scontrol hang), every scrape of
// the 128-job tree exports all 128 jobs at once, without metadata: the
// scrapes return while the one background squeue still hangs, so no Slurm
// command is on the scrape path. At shutdown the squeue is killed.
func TestScrapeWithHungSlurm(t *testing.T) {
	started := hungSlurm(t)
	srv, release := startNode(t, node128(t))
	pid := 0
	for i := range 3 {
		body := get(t, srv.URL+"/metrics")
		if !strings.Contains(body, "\njobscope_jobs 128\n") {
			t.Fatalf("scrape %d: jobscope_jobs is not 128", i)
		}
		if n := strings.Count(body, `metadata_source="none"`); n != 128 {
			t.Fatalf("scrape %d: %d jobs with metadata_source none, want 128", i, n)
		}
		if !strings.Contains(body, `jobscope_scrape_collector_success{collector="cgroup"} 1`) {
			t.Fatalf("scrape %d: cgroup collector failed", i)
		}
		pids := startedPIDs(t, started)
		if len(pids) != 1 {
			t.Fatalf("scrape %d: %d Slurm commands started, want the one background squeue", i, len(pids))
		}
		pid = pids[0]
		if syscall.Kill(pid, 0) != nil {
			t.Fatalf("scrape %d: the squeue has ended: the scrape may have waited for it", i)
		}
	}
	release()
	if syscall.Kill(pid, 0) == nil {
		t.Errorf("squeue %d still runs after shutdown", pid)
	}
}

func startedPIDs(t testing.TB, file string) []int {
	b, _ := os.ReadFile(file)
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		p, err := strconv.Atoi(f)
		if err != nil {
			t.Fatal(err)
		}
		pids = append(pids, p)
	}
	return pids
}

// BenchmarkScrape128 scrapes the 128-job tree over HTTP with no Slurm at
// all and with a squeue and an scontrol that hang: the times must match.
func BenchmarkScrape128(b *testing.B) {
	for _, tc := range []struct {
		name string
		hung bool
	}{{"no-slurm", false}, {"slurm-hung", true}} {
		b.Run(tc.name, func(b *testing.B) {
			args := node128(b)
			if tc.hung {
				hungSlurm(b)
			} else {
				args = append(args, "--slurm.node-metadata.squeue=false")
			}
			srv, _ := startNode(b, args)
			for b.Loop() {
				resp, err := srv.Client().Get(srv.URL + "/metrics")
				if err != nil {
					b.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
	}
}

// The landing page says what discovery found and skipped.
func TestLandingDiscovery(t *testing.T) {
	o, set, _ := demoOptions(t)
	logger, _ := newLogger("error", "json", io.Discard)
	exp, release, err := buildExporter(o, set, collector.ModeNode, logger)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	srv := httptest.NewServer(newMux(exp, o, logger))
	defer srv.Close()
	get(t, srv.URL+"/metrics")
	page := get(t, srv.URL+"/")
	for _, want := range []string{"Job discovery", "slurmstepd.scope", "job_id: 3", "background squeue</td><td>off"} {
		if !strings.Contains(page, want) {
			t.Errorf("landing page lacks %q:\n%s", want, page)
		}
	}
}
