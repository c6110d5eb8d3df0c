// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/jobscope/jobscope/collector"
)

// A --path.cgroupfs that exists but holds no cgroup hierarchy (an empty
// directory, or one whose subdirectories are no controllers) cannot show
// a job: the cgroup collector says so with success 0 and a cause, instead
// of success 1 and 0 jobs, which look like an idle node to every alert.
func TestCgroupRootWithoutHierarchy(t *testing.T) {
	junk := t.TempDir()
	if err := os.MkdirAll(filepath.Join(junk, "system.slice", "slurmstepd.scope"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, root := range map[string]string{"empty": t.TempDir(), "no controllers": junk} {
		t.Run(name, func(t *testing.T) {
			fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
			o, set := registerAll(fs)
			demo := filepath.Join("..", "..", "testdata", "demo")
			if err := fs.Parse([]string{"--path.cgroupfs=" + root, "--path.procfs=" + filepath.Join(demo, "proc"),
				"--path.sysfs=" + filepath.Join(demo, "sys"), "--slurm.job-props-dir=" + t.TempDir(),
				"--slurm.node-metadata.squeue=false", "--collector.ebpf=false", "--collector.gpu=false", "--collector.power=false"}); err != nil {
				t.Fatal(err)
			}
			var logged bytes.Buffer
			logger := slog.New(slog.NewTextHandler(&logged, nil))
			exp, release, err := buildExporter(o, set, collector.ModeNode, logger)
			if err != nil {
				t.Fatal(err)
			}
			defer release()
			srv := httptest.NewServer(newMux(exp, o, logger))
			defer srv.Close()
			get(t, srv.URL+"/metrics")
			body := get(t, srv.URL+"/metrics")
			for _, want := range []string{
				`jobscope_scrape_collector_success{collector="cgroup"} 0`,
				`jobscope_collector_errors_total{cause="no_cgroup_hierarchy",collector="cgroup"} 2`,
				`jobscope_scrape_collector_success{collector="process"} 1`, // the others stay whole
			} {
				if !strings.Contains(body, want) {
					t.Errorf("/metrics lacks %s", want)
				}
			}
			// Logged at start, not at each scrape; and never as a node
			// waiting for its first job.
			n := 0
			for l := range strings.Lines(logged.String()) {
				if strings.Contains(l, "no cgroup hierarchy") {
					n++
				}
			}
			if n != 2 {
				t.Errorf("%d log lines name the cause, want 2 (discovery's and the collector's, at start):\n%s", n, logged.String())
			}
			if strings.Contains(logged.String(), "slurmstepd creates") {
				t.Errorf("logged as a node without jobs yet:\n%s", logged.String())
			}
		})
	}
}
