// SPDX-License-Identifier: Apache-2.0

package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/jobscope/jobscope/collector"
	"github.com/jobscope/jobscope/collector/registry"
)

func demoOptions(t *testing.T) (*options, *collector.Set, *pflag.FlagSet) {
	t.Helper()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	o, set := registerAll(fs)
	root := filepath.Join("..", "..", "testdata", "demo")
	err := fs.Parse([]string{
		"--path.cgroupfs=" + filepath.Join(root, "cgroup"), "--path.procfs=" + filepath.Join(root, "proc"),
		"--path.sysfs=" + filepath.Join(root, "sys"), "--slurm.job-props-dir=" + filepath.Join(root, "props"),
		"--slurm.node-metadata.squeue=false", "--collector.ebpf=false",
	})
	if err != nil {
		t.Fatal(err)
	}
	return o, set, fs
}

// The demo node serves job series at /metrics and a landing page at /.
func TestServeDemo(t *testing.T) {
	o, set, _ := demoOptions(t)
	logger, _ := newLogger("error", "json", io.Discard)
	exp, _, err := buildExporter(o, set, collector.ModeNode, logger)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(newMux(exp, o, logger))
	defer srv.Close()
	body := get(t, srv.URL+"/metrics")
	for _, want := range []string{`slurm_job_info{account="physics"`, `jobscope_scrape_collector_success{collector="cgroup"} 1`, "go_goroutines"} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if !strings.Contains(get(t, srv.URL+"/"), "jobscope") {
		t.Error("landing page")
	}
	resp, err := http.Get(srv.URL + "/nope")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 404 {
		t.Errorf("unknown path: %v", resp.StatusCode)
	}
}

func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("%s: %d %s", url, resp.StatusCode, b)
	}
	return string(b)
}

func TestBadFlagsExit(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "web.yml")
	_ = os.WriteFile(bad, []byte("tls_server_config:\n  cert_file: /nonexistent\n"), 0o644)
	for _, args := range [][]string{
		{"--no-such-flag"}, {"--mode=both"}, {"--log.level=loud"}, {"--web.config.file=" + bad},
		{"--slurm.node-metadata.interval=0s", "--path.cgroupfs=" + t.TempDir()},
		{"--slurm.node-metadata.format=xml", "--path.cgroupfs=" + t.TempDir()},
		{"--slurm.node-name=-all", "--path.cgroupfs=" + t.TempDir()},
	} {
		if code := run(args); code != 2 {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
	if code := run([]string{"--version"}); code != 0 {
		t.Errorf("--version exit %d", code)
	}
}

// Controller mode turns node collectors off unless asked for.
func TestModeDefaults(t *testing.T) {
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	set := collector.RegisterFlags(fs, registry.Factories())
	_ = fs.Parse(nil)
	if !slices.Contains(set.Enabled(collector.ModeNode), "cgroup") || slices.Contains(set.Enabled(collector.ModeController), "cgroup") {
		t.Error("cgroup collector defaults")
	}
	fs = pflag.NewFlagSet("t", pflag.ContinueOnError)
	set = collector.RegisterFlags(fs, registry.Factories())
	_ = fs.Parse([]string{"--collector.cgroup"})
	if !slices.Contains(set.Enabled(collector.ModeController), "cgroup") {
		t.Error("--collector.cgroup must override the controller default")
	}
	fs = pflag.NewFlagSet("t", pflag.ContinueOnError)
	set = collector.RegisterFlags(fs, registry.Factories())
	_ = fs.Parse([]string{"--collector.cgroup=false"})
	if slices.Contains(set.Enabled(collector.ModeNode), "cgroup") {
		t.Error("--collector.cgroup=false must turn it off")
	}
}

func TestGzip(t *testing.T) {
	for h, want := range map[string]bool{"gzip": true, "deflate, gzip;q=1.0": true, "gzip;q=0": false, "identity": false, "": false} {
		if acceptsGzip(h) != want {
			t.Errorf("%q: want %v", h, want)
		}
	}
	o, set, _ := demoOptions(t)
	logger, _ := newLogger("error", "json", io.Discard)
	exp, _, err := buildExporter(o, set, collector.ModeNode, logger)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(newMux(exp, o, logger))
	defer srv.Close()
	// Go's client asks for gzip and decompresses transparently.
	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !resp.Uncompressed || !strings.Contains(string(b), "slurm_job_info") {
		t.Errorf("gzip response not decoded: uncompressed=%v", resp.Uncompressed)
	}
}
