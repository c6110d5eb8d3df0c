// SPDX-License-Identifier: Apache-2.0

package slurmcli

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeRestd is a slurmrestd on a unix socket: each request goes to
// handle, and is recorded.
type fakeRestd struct {
	url  string
	mu   sync.Mutex
	reqs []*http.Request
}

func (f *fakeRestd) requests(path string) []*http.Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*http.Request
	for _, r := range f.reqs {
		if strings.HasSuffix(r.URL.Path, path) {
			out = append(out, r)
		}
	}
	return out
}

func newFakeRestd(t *testing.T, handle http.HandlerFunc) *fakeRestd {
	t.Helper()
	// A socket path has room for ~100 bytes: t.TempDir() holds the test's
	// name, so a short directory of its own.
	dir, err := os.MkdirTemp("", "rd")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	sock := filepath.Join(dir, "s")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeRestd{url: "unix://" + sock}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.reqs = append(f.reqs, r)
		f.mu.Unlock()
		handle(w, r)
	}))
	srv.Listener = ln
	srv.Start()
	t.Cleanup(srv.Close)
	return f
}

// pingAt answers the ping of version v only (the others 404), and hands
// every other request to next.
func pingAt(v string, next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/ping") {
			if r.URL.Path != "/slurm/"+v+"/ping" {
				http.Error(w, `{"errors":[{"description":"Unable to find requested URL"}]}`, http.StatusNotFound)
				return
			}
			_, _ = w.Write([]byte(`{"pings":[{"hostname":"ctl","pinged":"UP"}],"errors":[]}`))
			return
		}
		next(w, r)
	}
}

// serveFile answers with a capture.
func serveFile(t *testing.T, path string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Error(err)
			http.Error(w, err.Error(), 500)
			return
		}
		_, _ = w.Write(b)
	}
}

func newTestRestd(t *testing.T, cfg RestdConfig) (*Restd, *Runner) {
	t.Helper()
	runner := &Runner{}
	rd, err := NewRestd(cfg, runner.Stats())
	if err != nil {
		t.Fatal(err)
	}
	return rd, runner
}

func errCount(r *Runner, name, cause string) float64 {
	_, st := r.Stats().Snapshot()
	return st[name].Errors[cause]
}

// The client probes the versions newest first, once, and keeps the first
// that answers.
func TestRestdVersionProbe(t *testing.T) {
	f := newFakeRestd(t, pingAt("v0.0.41", func(w http.ResponseWriter, _ *http.Request) {}))
	rd, runner := newTestRestd(t, RestdConfig{URL: f.url})
	for range 3 {
		v, err := rd.Version(context.Background())
		if err != nil || v != "v0.0.41" {
			t.Fatalf("version %q, %v; want v0.0.41", v, err)
		}
	}
	var got []string
	for _, r := range f.requests("/ping") {
		got = append(got, r.URL.Path)
	}
	var want []string
	for _, v := range RestdVersions[:slices.Index(RestdVersions, "v0.0.41")+1] {
		want = append(want, "/slurm/"+v+"/ping")
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("probes %v, want %v (newest first, once)", got, want)
	}
	// A slurmrestd that knows none of them: a clear error, probed again
	// next time.
	g := newFakeRestd(t, pingAt("v0.0.99", nil))
	rd2, runner2 := newTestRestd(t, RestdConfig{URL: g.url})
	if _, err := rd2.Version(context.Background()); err == nil || !strings.Contains(err.Error(), "none of the data_parser versions") {
		t.Errorf("no version: %v", err)
	}
	if _, err := rd2.Version(context.Background()); err == nil || len(g.requests("/ping")) != 2*len(RestdVersions) {
		t.Errorf("not probed again: %d pings", len(g.requests("/ping")))
	}
	// A version's 404 is an answer, not a failure: the first client's
	// 404s count no error; the second's two failed probes count
	// one each, however many versions each tried.
	if n := errCount(runner, RestdPing, CauseExit); n != 0 {
		t.Errorf("404s of a probe that found v0.0.41 counted %v errors, want 0", n)
	}
	if n := errCount(runner2, RestdPing, CauseExit); n != 2 {
		t.Errorf("two probes that found no version counted %v errors, want 2", n)
	}
}

// restdReleases are the command captures per release, each REST body here
// the release's squeue --json (and for 22.05 sinfo --json) output served
// as slurmrestd's answer: from 23.02 squeue --json prints slurmrestd's own
// job list response (OPENAPI_JOB_INFO_RESP: jobs, last_backfill,
// last_update, meta, errors, warnings), so the bytes are the same
// data_parser dump; 22.05's squeue --json and sinfo --json are v0.0.38's
// job and node dumps, without last_update. Real slurmrestd answers of the
// same releases are read by TestRestdRealCaptures.
var restdReleases = []struct{ dir, version string }{
	{"22.05", "v0.0.38"}, {"24.11", "v0.0.42"}, {"26.05", "v0.0.44"},
}

// Jobs and nodes read through slurmrestd equal those the commands' JSON
// gives for the same moment.
func TestRestdAgreesWithCommands(t *testing.T) {
	for _, rel := range restdReleases {
		for _, when := range []string{"running", "after"} {
			dir := filepath.Join("..", "testdata", "slurm", rel.dir)
			squeue := filepath.Join(dir, "squeue-"+when+".json")
			sinfo := filepath.Join(dir, "sinfo-"+when+".json")
			f := newFakeRestd(t, pingAt(rel.version, func(w http.ResponseWriter, r *http.Request) {
				switch r.URL.Path {
				case "/slurm/" + rel.version + "/jobs":
					serveFile(t, squeue)(w, r)
				case "/slurm/" + rel.version + "/nodes":
					serveFile(t, sinfo)(w, r)
				default:
					http.NotFound(w, r)
				}
			}))
			rd, _ := newTestRestd(t, RestdConfig{URL: f.url})
			c := NewCache(CacheConfig{Runner: &Runner{}, Interval: time.Minute, Restd: rd})
			t.Cleanup(c.Close)
			jobs, _, ok, err := serve(context.Background(), c, c.Jobs)
			if !ok || err != nil {
				t.Fatalf("%s %s jobs: %v", rel.dir, when, err)
			}
			fh, err := os.Open(squeue)
			if err != nil {
				t.Fatal(err)
			}
			want, err := ParseSqueueJSON(fh)
			_ = fh.Close()
			if err != nil || len(want) == 0 {
				t.Fatalf("%s: %d jobs, %v", squeue, len(want), err)
			}
			if !reflect.DeepEqual(jobs, want) {
				t.Errorf("%s %s: jobs via slurmrestd differ from squeue --json:\n%+v\n%+v", rel.dir, when, jobs, want)
			}
			if rel.dir != "22.05" {
				// 23.02 and later: sinfo --json prints "sinfo" records,
				// not the node list /nodes answers (no capture of that
				// yet): the nodes agreement is 22.05's only.
				continue
			}
			nodes, _, ok, err := serve(context.Background(), c, c.Nodes)
			if !ok || err != nil {
				t.Fatalf("%s %s nodes: %v", rel.dir, when, err)
			}
			fh, _ = os.Open(sinfo)
			wantNodes, err := ParseSinfoJSON(fh)
			_ = fh.Close()
			if err != nil || !reflect.DeepEqual(nodes, wantNodes) {
				t.Errorf("%s %s: nodes via slurmrestd %+v, sinfo --json %+v (%v)", rel.dir, when, nodes, wantNodes, err)
			}
		}
	}
}

// noChangeJobs is 24.11's answer to /jobs?update_time=T when slurmctld
// has no newer job data: HTTP 200, an empty list, last_update 0 and a
// warning (slurmrestd's OPENAPI_JOB_INFO_RESP dumped from a zeroed
// response).
func noChangeJobs(since string) string {
	return `{"jobs":[],"last_backfill":{"set":true,"infinite":false,"number":0},` +
		`"last_update":{"set":true,"infinite":false,"number":0},"meta":{},"errors":[],` +
		`"warnings":[{"description":"No job changes since update_time[` + since + `]=Fri Nov 27 21:00:00 2026","source":"_op_handler_jobs"}]}`
}

// After a full answer, each request carries its last_update; "no change"
// (as a 200 with the warning, or a 304) keeps the previous jobs; an empty
// list without that warning is an empty queue.
func TestRestdConditionalJobs(t *testing.T) {
	capture := filepath.Join("..", "testdata", "slurm", "24.11", "squeue-running.json")
	var (
		mu     sync.Mutex
		answer = "full"
	)
	f := newFakeRestd(t, pingAt("v0.0.42", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		a := answer
		mu.Unlock()
		switch a {
		case "full":
			serveFile(t, capture)(w, r)
		case "warning":
			_, _ = w.Write([]byte(noChangeJobs(r.URL.Query().Get("update_time"))))
		case "304":
			w.WriteHeader(http.StatusNotModified)
		case "empty":
			_, _ = w.Write([]byte(`{"jobs":[],"last_update":{"set":true,"infinite":false,"number":1795570000},"errors":[],"warnings":[]}`))
		}
	}))
	rd, _ := newTestRestd(t, RestdConfig{URL: f.url})
	fetch := restdFetch(rd, RestdJobs, "/jobs", true, restdJobs)
	first, _, err := fetch(context.Background())
	if err != nil || len(first) == 0 {
		t.Fatalf("full answer: %d jobs, %v", len(first), err)
	}
	reqs := f.requests("/jobs")
	if q := reqs[0].URL.RawQuery; q != "" {
		t.Errorf("first request %q: want no update_time (nothing to compare with)", q)
	}
	for _, a := range []string{"warning", "304"} {
		mu.Lock()
		answer = a
		mu.Unlock()
		got, _, err := fetch(context.Background())
		if err != nil || !reflect.DeepEqual(got, first) {
			t.Errorf("%s: %d jobs, %v; want the previous %d", a, len(got), err, len(first))
		}
		reqs = f.requests("/jobs")
		// 24.11-running's last_update.
		if q := reqs[len(reqs)-1].URL.Query().Get("update_time"); q != "1795563563" {
			t.Errorf("%s: update_time %q, want the previous answer's last_update", a, q)
		}
	}
	mu.Lock()
	answer = "empty"
	mu.Unlock()
	got, _, err := fetch(context.Background())
	if err != nil || len(got) != 0 {
		t.Errorf("an empty queue: %d jobs, %v; want none", len(got), err)
	}
}

// 24.11's v0.0.40 and v0.0.41 refuse update_time as unix seconds with 422
// (the body is 24.11.5's v0.0.41 answer, its number changed): the same poll asks again
// without it, nothing counts as an error, and later polls of that version
// send none.
func TestRestdUpdateTimeRefused(t *testing.T) {
	capture := filepath.Join("..", "testdata", "slurm", "24.11", "squeue-running.json")
	refused := `{"errors":[{"description":"Parsing of 1795563563 for timestamp failed","error_number":9202,` +
		`"error":"Unable to convert Data type","source":"#/update_time/"},{"description":"Rejecting request. ` +
		`Failure parsing query.","error_number":9000,"error":"Query empty or not RFC7320 compliant",` +
		`"source":"op_handler_jobs"}],"warnings":[]}`
	f := newFakeRestd(t, pingAt("v0.0.41", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Has("update_time") {
			w.WriteHeader(http.StatusUnprocessableEntity)
			_, _ = w.Write([]byte(refused))
			return
		}
		serveFile(t, capture)(w, r)
	}))
	rd, runner := newTestRestd(t, RestdConfig{URL: f.url, Versions: []string{"v0.0.41"}})
	fetch := restdFetch(rd, RestdJobs, "/jobs", true, restdJobs)
	var first []Job
	for i := range 3 {
		got, _, err := fetch(context.Background())
		if err != nil || len(got) == 0 {
			t.Fatalf("poll %d: %d jobs, %v", i, len(got), err)
		}
		if i == 0 {
			first = got
		} else if !reflect.DeepEqual(got, first) {
			t.Errorf("poll %d: %d jobs, want the whole list again (%d)", i, len(got), len(first))
		}
	}
	var qs []string
	for _, r := range f.requests("/jobs") {
		qs = append(qs, r.URL.RawQuery)
	}
	if want := []string{"", "update_time=1795563563", "", ""}; !reflect.DeepEqual(qs, want) {
		t.Errorf("queries %q, want %q (one refused update_time, then none)", qs, want)
	}
	if n := errCount(runner, RestdJobs, CauseExit); n != 0 {
		t.Errorf("the refused update_time counted %v errors, want 0", n)
	}
}

// "No change" to the first request (no previous value) is an error,
// never an empty queue, counted; the nodes' form of it (error 1900) too.
func TestRestdNoChangeFirst(t *testing.T) {
	for _, c := range []struct {
		name, path string
		body       string
		status     int
	}{
		{"jobs-warning", "/jobs", noChangeJobs("0"), 200},
		{"jobs-304", "/jobs", "", http.StatusNotModified},
		{"nodes-1900", "/nodes", `{"errors":[{"error_number":1900,"error":"Data has not changed since time specified","source":"_dump_nodes","description":"Failure to query nodes"}],"warnings":[]}`, 200},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFakeRestd(t, pingAt("v0.0.42", func(w http.ResponseWriter, _ *http.Request) {
				w.WriteHeader(c.status)
				_, _ = w.Write([]byte(c.body))
			}))
			rd, runner := newTestRestd(t, RestdConfig{URL: f.url})
			var err error
			name := RestdJobs
			if c.path == "/jobs" {
				_, _, err = restdFetch(rd, RestdJobs, c.path, true, restdJobs)(context.Background())
			} else {
				name = RestdNodes
				_, _, err = restdFetch(rd, RestdNodes, c.path, false, restdNodes)(context.Background())
			}
			if err == nil || !strings.Contains(err.Error(), "no previous value") {
				t.Errorf("err %v, want the no-previous-value error", err)
			}
			if n := errCount(runner, name, CauseParse); n != 1 {
				t.Errorf("counted %v parse errors, want 1", n)
			}
		})
	}
}

// Hostile or broken answers: a clear error, its cause counted, no value,
// and the cache keeps serving the last good jobs with their age.
func TestRestdHostile(t *testing.T) {
	capture := filepath.Join("..", "testdata", "slurm", "26.05", "squeue-running.json")
	const secret = "eyJhbGciOiJIUzI1NiJ9.c2VjcmV0.dG9rZW4"
	for _, c := range []struct {
		name   string
		handle http.HandlerFunc
		cause  string
		want   string
	}{
		{"oversized", func(w http.ResponseWriter, _ *http.Request) {
			_, _ = w.Write([]byte(`{"jobs":[],"meta":"` + strings.Repeat("x", 2<<20) + `"}`))
		}, CauseTooLarge, "over the size limit"},
		{"slow", func(w http.ResponseWriter, r *http.Request) {
			_, _ = w.Write([]byte(`{"jobs":[`))
			w.(http.Flusher).Flush()
			<-r.Context().Done() // never ends the body
		}, CauseTimeout, "timed out"},
		{"401", func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, `{"errors":[{"description":"Authentication failure","error_number":1007}]}`, http.StatusUnauthorized)
		}, CauseExit, `HTTP 401 Unauthorized: "Authentication failure"`},
		{"403", func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, "denied \x1b[31mred", http.StatusForbidden)
		}, CauseExit, `HTTP 403 Forbidden: "denied \x1b[31mred\n"`},
		{"500", func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, `{"errors":[{"description":"Unable to query jobs","error":"Unable to contact slurm controller (connect failure)"}]}`, 500)
		}, CauseExit, "Unable to query jobs"},
		{"garbage", func(w http.ResponseWriter, _ *http.Request) {
			_, _ = w.Write([]byte(`{"jobs":[{"job_id":1,}`))
		}, CauseParse, "slurmrestd /jobs"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var (
				mu   sync.Mutex
				good = true
			)
			f := newFakeRestd(t, pingAt("v0.0.44", func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				g := good
				mu.Unlock()
				if g {
					serveFile(t, capture)(w, r)
					return
				}
				c.handle(w, r)
			}))
			dir := t.TempDir()
			tok := filepath.Join(dir, "token")
			if err := os.WriteFile(tok, []byte(secret+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			var logs bytes.Buffer
			logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
			runner := &Runner{Logger: logger}
			rd, err := NewRestd(RestdConfig{URL: f.url, TokenFile: tok, MaxBody: 1 << 20, Timeout: 300 * time.Millisecond, Logger: logger}, runner.Stats())
			if err != nil {
				t.Fatal(err)
			}
			clk := newFakeClock()
			cache := NewCache(CacheConfig{Runner: runner, Interval: time.Minute, MaxAge: 10 * time.Minute, Restd: rd, Logger: logger, Now: clk.Now})
			t.Cleanup(cache.Close)
			first, _, ok, err := serve(context.Background(), cache, cache.Jobs)
			if !ok || err != nil || len(first) == 0 {
				t.Fatalf("good answer: %d jobs, %v", len(first), err)
			}
			mu.Lock()
			good = false
			mu.Unlock()
			clk.Add(time.Minute)
			start := time.Now()
			jobs, age, ok, err := serve(context.Background(), cache, cache.Jobs)
			if took := time.Since(start); took > 5*time.Second {
				t.Errorf("took %s: the request is bounded by its timeout", took)
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err %v, want it to say %q", err, c.want)
			}
			if !ok || !reflect.DeepEqual(jobs, first) || age != time.Minute {
				t.Errorf("served %v (%d jobs, age %s), want the previous %d jobs a minute old", ok, len(jobs), age, len(first))
			}
			if n := errCount(runner, RestdJobs, c.cause); n != 1 {
				t.Errorf("cause %s counted %v, want 1", c.cause, n)
			}
			if !strings.Contains(logs.String(), "failing") {
				t.Errorf("no log line for the failure:\n%s", logs.String())
			}
			if strings.Contains(logs.String(), secret) || strings.Contains(fmt.Sprint(err), secret) {
				t.Errorf("the token reached the log or an error")
			}
			if got := f.requests("/jobs")[0].Header.Get("X-SLURM-USER-TOKEN"); got != secret {
				t.Errorf("token header %q, want the file's", got)
			}
		})
	}
}

// The token file is read at each request: a renewed token is used at
// once; a missing one fails the request (cause start) without a request.
func TestRestdTokenFileReread(t *testing.T) {
	srv := httptest.NewServer(pingAt("v0.0.40", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(`{"jobs":[],"errors":[]}`))
	}))
	t.Cleanup(srv.Close)
	tok := filepath.Join(t.TempDir(), "jwt")
	var (
		mu   sync.Mutex
		seen []string
	)
	wrap := srv.Config.Handler
	srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Get("X-SLURM-USER-TOKEN"))
		mu.Unlock()
		wrap.ServeHTTP(w, r)
	})
	rd, runner := newTestRestd(t, RestdConfig{URL: srv.URL, TokenFile: tok})
	fetch := restdFetch(rd, RestdJobs, "/jobs", true, restdJobs)
	if _, _, err := fetch(context.Background()); err == nil || !strings.Contains(err.Error(), "token file") {
		t.Errorf("missing token file: %v", err)
	}
	for _, tk := range []string{"one", "two"} {
		if err := os.WriteFile(tok, []byte(tk+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, _, err := fetch(context.Background()); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		last := seen[len(seen)-1]
		mu.Unlock()
		if last != tk {
			t.Errorf("token %q, want %q (read at each request)", last, tk)
		}
	}
	if n := errCount(runner, RestdPing, CauseStart); n != 1 {
		t.Errorf("missing token counted %v as start, want 1", n)
	}
	if err := os.WriteFile(tok, []byte("a\x1bb"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := fetch(context.Background()); err == nil || strings.Contains(err.Error(), "a\x1bb") {
		t.Errorf("a token with a control character: %v", err)
	}
}

func TestParseRestdURL(t *testing.T) {
	for in, ok := range map[string]bool{
		DefaultRestdURL: true, "http://127.0.0.1:6820": true, "https://ctl:6820/": true,
		"unix://rel.sock": false, "http://u:p@ctl:6820": false, "http://ctl:6820/slurm": false,
		"ftp://ctl": false, "http://ctl?x=1": false, "": false,
	} {
		if _, _, err := ParseRestdURL(in); (err == nil) != ok {
			t.Errorf("%q: err %v, want ok %v", in, err, ok)
		}
	}
}
