// SPDX-License-Identifier: Apache-2.0

package report

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func runCLI(t *testing.T, o Options, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	code = mainWith(context.Background(), append([]string{"--config=testdata/report.yml", "--color=never"}, args...),
		&out, &errb, false, o)
	return out.String(), errb.String(), code
}

func TestPrometheusUnreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	_, stderr, code := runCLI(t, scenarioOptions(t, nil), "--prometheus.url=http://"+addr, "4242")
	if code != ExitFailed || !strings.Contains(stderr, "cannot get an answer from Prometheus at http://"+addr) ||
		!strings.Contains(stderr, "connection refused") {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
}

func TestPrometheusSlow(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-time.After(30 * time.Second):
		}
	}))
	defer srv.Close()
	defer close(release)
	start := time.Now()
	_, stderr, code := runCLI(t, scenarioOptions(t, nil), "--prometheus.url="+srv.URL, "--prometheus.timeout=300ms", "4242")
	took := time.Since(start)
	if code != ExitFailed || !strings.Contains(stderr, "did not answer within 300ms") {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
	if took > 10*time.Second {
		t.Errorf("gave up after %s: the timeout did not hold", took)
	}
}

func TestPrometheusRefusesCredentials(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != "report" || p != "s3cret" {
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"status":"success","data":[]}`))
	}))
	defer srv.Close()
	pw := filepath.Join(t.TempDir(), "pw")
	os.WriteFile(pw, []byte("wrong\n"), 0o600)
	_, stderr, code := runCLI(t, scenarioOptions(t, nil), "--prometheus.url="+srv.URL, "--prometheus.username=report",
		"--prometheus.password-file="+pw, "4242")
	if code != ExitFailed || !strings.Contains(stderr, "refused the credentials") {
		t.Errorf("wrong password: exit %d, stderr %q", code, stderr)
	}
	// The right password gets through: the job is then simply unknown.
	os.WriteFile(pw, []byte("s3cret\n"), 0o600)
	_, stderr, code = runCLI(t, scenarioOptions(t, nil), "--prometheus.url="+srv.URL, "--prometheus.username=report",
		"--prometheus.password-file="+pw, "--sacct=never", "4242")
	if code != ExitFailed || !strings.Contains(stderr, "unknown job") {
		t.Errorf("right password: exit %d, stderr %q", code, stderr)
	}
}

func TestBadFlagsAndConfig(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for name, c := range map[string]struct {
		args []string
		want string
	}{
		"no job":           {nil, "no job id: give one (jobscope report 4242)"},
		"jobs and user":    {[]string{"--user=alice", "4242"}, "not both"},
		"csv for a job":    {[]string{"--format=csv", "4242"}, "usage summaries"},
		"unknown format":   {[]string{"--format=xml", "4242"}, "want text, json, html or csv"},
		"html for several": {[]string{"--format=html", "1", "2"}, "%j"},
		"bad reused":       {[]string{"--reused=first", "1"}, "want ask or latest"},
		"bad since":        {[]string{"--user=a", "--since=yesterday"}, "--since"},
		"bad url":          {[]string{"--prometheus.url=localhost", "1"}, "want http(s)://host:port"},
		"unknown key":      {[]string{"--config=" + write("a.yml", "thresholds:\n  cpu_eff: 0.3\n"), "1"}, "field cpu_eff not found"},
		"bad fraction":     {[]string{"--config=" + write("b.yml", "thresholds:\n  memory_low: 25\n"), "1"}, "memory_low = 25"},
		"missing config":   {[]string{"--config=" + filepath.Join(dir, "none.yml"), "1"}, "no such file"},
		"bad sacct":        {[]string{"--sacct=maybe", "1"}, "want auto, always or never"},
	} {
		t.Run(name, func(t *testing.T) {
			var out, errb bytes.Buffer
			args := c.args
			if !strings.HasPrefix(strings.Join(args, " "), "--config") {
				args = append([]string{"--config=testdata/report.yml"}, args...)
			}
			code := mainWith(context.Background(), args, &out, &errb, false, scenarioOptions(t, nil))
			if code != ExitUsage || !strings.Contains(errb.String(), c.want) {
				t.Errorf("exit %d, stderr %q, want %d and %q", code, errb.String(), ExitUsage, c.want)
			}
		})
	}
}

// TestConfigKeepsDefaults: a site file that sets a few keys keeps every
// other default.
func TestConfigKeepsDefaults(t *testing.T) {
	p := filepath.Join(t.TempDir(), "r.yml")
	os.WriteFile(p, []byte("prometheus:\n  url: https://prom.example:9090\n  http_config:\n    basic_auth:\n"+
		"      username: u\n      password_file: pw\nthresholds:\n  cpu_efficiency_low: 0.65\n"), 0o644)
	cfg, err := LoadConfig(p, true)
	if err != nil {
		t.Fatal(err)
	}
	def := DefaultConfig()
	if cfg.Thresholds.CPUEfficiencyLow != 0.65 || cfg.Thresholds.MemoryLow != def.Thresholds.MemoryLow ||
		cfg.Prometheus.Timeout != def.Prometheus.Timeout || cfg.Lookback != def.Lookback || cfg.Usage.Jobs != def.Usage.Jobs {
		t.Errorf("config %+v", cfg)
	}
	// Relative secret files are relative to the config file.
	if got := cfg.Prometheus.HTTP.BasicAuth.PasswordFile; got != filepath.Join(filepath.Dir(p), "pw") {
		t.Errorf("password_file %q", got)
	}
	if cfg, err := LoadConfig(filepath.Join(t.TempDir(), "absent.yml"), false); err != nil || cfg.Sacct != "auto" {
		t.Errorf("absent default file: %v %+v", err, cfg)
	}
}

// TestColourOnlyWhenAsked: ANSI codes with --color=always, none by default
// when stdout is not a terminal.
func TestColourOnlyWhenAsked(t *testing.T) {
	rp := loadReplay(t)
	srv := rp.server(t)
	run := func(isTTY bool, color string) string {
		var out, errb bytes.Buffer
		code := mainWith(context.Background(), []string{"--config=testdata/report.yml", "--prometheus.url=" + srv.URL,
			"--color=" + color, "555"}, &out, &errb, isTTY, scenarioOptions(t, nil))
		if code != ExitOK {
			t.Fatalf("exit %d: %s", code, errb.String())
		}
		return out.String()
	}
	if s := run(false, "auto"); strings.Contains(s, "\x1b[") {
		t.Error("colour in output to a file")
	}
	if s := run(true, "never"); strings.Contains(s, "\x1b[") {
		t.Error("colour despite --color=never")
	}
	if s := run(true, "auto"); !strings.Contains(s, "\x1b[1;31mCRITICAL") {
		t.Error("no colour on a terminal")
	}
}

// TestPrivatePathsStayPrivate: another user's executables are neither
// asked for nor printed; the owner sees them.
func TestPrivatePathsStayPrivate(t *testing.T) {
	rp := loadReplay(t)
	srv := rp.server(t)
	for _, c := range []struct {
		me, job string
		show    bool
	}{{"alice", "4242", true}, {"bob", "4242", false}, {"alice", "555", false}} {
		o := scenarioOptions(t, nil)
		o.CurrentUser = c.me
		for _, format := range []string{"text", "json", "html"} {
			out, errb, code := runCLI(t, o, "--prometheus.url="+srv.URL, "--format="+format, c.job)
			if code != ExitOK {
				t.Fatalf("%s as %s: exit %d: %s", c.job, c.me, code, errb)
			}
			shown := strings.Contains(out, "/home/") || strings.Contains(out, "/usr/bin/perl")
			if shown != c.show {
				t.Errorf("job %s as %s (%s): executable paths shown %v, want %v", c.job, c.me, format, shown, c.show)
			}
		}
	}
}

// TestEndedFlag: an epilog reports a job that sacct and Prometheus still
// show running as ended at its last sample.
func TestEndedFlag(t *testing.T) {
	rp := loadReplay(t)
	srv := rp.server(t)
	out, errb, code := runCLI(t, scenarioOptions(t, nil), "--prometheus.url="+srv.URL, "--reused=latest", "--ended",
		"--format=json", "777")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errb)
	}
	for _, want := range []string{`"state": "ENDED"`, `"running": false`, `"end_source": "last_sample"`} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %s", want)
		}
	}
}

// TestNoJobIsOneLine: a forgotten job id gets one line that says so, not
// the whole usage.
func TestNoJobIsOneLine(t *testing.T) {
	_, stderr, code := runCLI(t, scenarioOptions(t, nil))
	if code != ExitUsage || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "no job id") {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
}

// TestNotPrometheus: a URL that is not Prometheus's (the exporter's own,
// which answers 404 off its paths, or a page of metrics or HTML) is named
// as such, in one line.
func TestNotPrometheus(t *testing.T) {
	for name, c := range map[string]struct {
		h    http.HandlerFunc
		want string
	}{
		"404 like the exporter": {http.NotFound, "(it answered 404 to /api/v1/"},
		"metrics text": {func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/plain; version=0.0.4")
			io.WriteString(w, "# HELP up x\n# TYPE up gauge\nup 1\n")
		}, "is not Prometheus API JSON"},
		"HTML page": {func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, "<!doctype html><title>jobscope</title><a href=/metrics>Metrics</a>")
		}, "is not Prometheus API JSON"},
	} {
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewServer(c.h)
			defer srv.Close()
			_, stderr, code := runCLI(t, scenarioOptions(t, nil), "--prometheus.url="+srv.URL, "4242")
			want := srv.URL + " is not a Prometheus server "
			if code != ExitFailed || !strings.Contains(stderr, want) || !strings.Contains(stderr, c.want) ||
				!strings.Contains(stderr, "point --prometheus.url at Prometheus, not at the exporter") ||
				strings.Count(stderr, "\n") != 1 {
				t.Errorf("exit %d, stderr %q", code, stderr)
			}
		})
	}
}
