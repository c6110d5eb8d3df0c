// SPDX-License-Identifier: Apache-2.0

package report

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
)

var record = flag.Bool("record", false, "rebuild testdata/report/prometheus.json from a real Prometheus over the scenario (needs prometheus and promtool), and rewrite the goldens")

const fixtureFile = "testdata/prometheus.json"

// answer is one recorded Prometheus HTTP answer.
type answer struct {
	Status int             `json:"status"`
	Body   json.RawMessage `json:"body"`
}

// requestKey names a Prometheus API request by path and sorted parameters
// (URL query and form body alike), whatever the host and method.
func requestKey(r *http.Request) (string, error) {
	var body []byte
	if r.Body != nil {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			return "", err
		}
		body = b
		r.Body = io.NopCloser(bytes.NewReader(b))
	}
	params := r.URL.Query()
	if len(body) > 0 {
		form, err := url.ParseQuery(string(body))
		if err != nil {
			return "", err
		}
		for k, vs := range form {
			params[k] = append(params[k], vs...)
		}
	}
	return r.URL.Path + "?" + params.Encode(), nil
}

// recorder is an http.RoundTripper that keeps every answer it passes on.
type recorder struct {
	next http.RoundTripper
	mu   sync.Mutex
	got  map[string]answer
}

func (rec *recorder) RoundTrip(r *http.Request) (*http.Response, error) {
	key, err := requestKey(r)
	if err != nil {
		return nil, err
	}
	resp, err := rec.next.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(b))
	if !json.Valid(b) {
		b, _ = json.Marshal(string(b))
	}
	rec.mu.Lock()
	rec.got[key] = answer{Status: resp.StatusCode, Body: b}
	rec.mu.Unlock()
	return resp, nil
}

// replay serves the recorded answers; a request that was never recorded
// gets an error naming it (and fails the run that made it).
type replay struct {
	answers map[string]answer
	mu      sync.Mutex
	missing []string
}

func loadReplay(t *testing.T) *replay {
	t.Helper()
	b, err := os.ReadFile(fixtureFile)
	if err != nil {
		t.Fatalf("%v (rebuild it with go test ./cmd/jobscope-report/report -run TestRecordFixture -record)", err)
	}
	rp := &replay{}
	if err := json.Unmarshal(b, &rp.answers); err != nil {
		t.Fatal(err)
	}
	return rp
}

func (rp *replay) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	key, err := requestKey(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	a, ok := rp.answers[key]
	if !ok {
		rp.mu.Lock()
		rp.missing = append(rp.missing, key)
		rp.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, `{"status":"error","errorType":"bad_data","error":%q}`, "not recorded: "+key)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(a.Status)
	if len(a.Body) > 0 && a.Body[0] == '"' {
		var s string
		_ = json.Unmarshal(a.Body, &s)
		io.WriteString(w, s)
		return
	}
	w.Write(a.Body)
}

func (rp *replay) server(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(rp)
	t.Cleanup(srv.Close)
	t.Cleanup(func() {
		if len(rp.missing) > 0 {
			sort.Strings(rp.missing)
			t.Errorf("requests not in %s (re-record with -record):\n%s", fixtureFile, strings.Join(rp.missing, "\n"))
		}
	})
	return srv
}

func writeFixture(t *testing.T, got map[string]answer) {
	t.Helper()
	b, err := json.MarshalIndent(got, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(fixtureFile), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(fixtureFile, append(b, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
}
