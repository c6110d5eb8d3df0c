// SPDX-License-Identifier: Apache-2.0

package service

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/jobscope/jobscope/internal/mungeauth"
	"github.com/jobscope/jobscope/internal/mungeauth/mungetest"
	"github.com/jobscope/jobscope/slurmcli"
)

type testServer struct {
	*Server
	url  string
	sock string
}

func startServer(t *testing.T, proxy ProxyConfig) *testServer {
	t.Helper()
	sock := mungetest.Start(t)
	b := fakeSlurm(t)
	cfg := DefaultConfig()
	cfg.Munge.Socket = sock
	cfg.Proxy = proxy
	cfg.Report.Prometheus.URL = "http://127.0.0.1:1" // nothing there: allowed reports fail after the decision
	cfg.Report.Sacct = "never"
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	s := New(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	s.access.Slurm = &slurmcli.Runner{BinDir: b.Dir}
	s.access.LookupID = names
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := s.HTTPServer()
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return &testServer{Server: s, url: "http://" + ln.Addr().String(), sock: sock}
}

// cred mints a credential for uid (root may name any uid to munged) bound
// to method and pathQuery.
func (ts *testServer) cred(t *testing.T, uid int, ttl int, method, pathQuery string) string {
	t.Helper()
	return ts.credNonce(t, uid, ttl, method, pathQuery, mungeauth.NewNonce())
}

// credNonce is cred with a given nonce.
func (ts *testServer) credNonce(t *testing.T, uid int, ttl int, method, pathQuery, nonce string) string {
	t.Helper()
	args := []string{"--socket=" + ts.sock, "-U", strconv.Itoa(uid), "-G", strconv.Itoa(uid), "--input=/dev/stdin"}
	if ttl > 0 {
		args = append(args, "-t", strconv.Itoa(ttl))
	}
	cmd := exec.Command("munge", args...)
	cmd.Stdin = strings.NewReader(mungeauth.Payload(method, pathQuery, nonce, time.Now()))
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("munge -U %d: %v", uid, err)
	}
	return strings.TrimSpace(string(out))
}

func (ts *testServer) get(t *testing.T, pathQuery string, hdr map[string]string) (int, string) {
	t.Helper()
	req, _ := http.NewRequestWithContext(context.Background(), "GET", ts.url+pathQuery, nil)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestServiceDecisions runs requests through a real munged and fake Slurm
// commands: each credential problem and each access rule gives its own
// counted reason; allowed requests reach the report (whose Prometheus is
// down here, so they fail after the decision, with report_failed).
func TestServiceDecisions(t *testing.T) {
	ts := startServer(t, ProxyConfig{})
	const job100, job200 = "/v1/job/100?format=text", "/v1/job/200?format=text"
	auth := func(c string) map[string]string { return map[string]string{"Authorization": "MUNGE " + c} }

	replayed := ts.cred(t, 1001, 0, "GET", job100)
	expired := ts.cred(t, 1001, 1, "GET", job100)
	time.Sleep(2100 * time.Millisecond)
	other := mungetest.Start(t)
	wrongKey := (&testServer{sock: other}).cred(t, 1001, 0, "GET", job100)

	for _, c := range []struct {
		name, path string
		hdr        map[string]string
		status     int
		reason     string
	}{
		{"owner", job100, auth(ts.cred(t, 1001, 0, "GET", job100)), 502, reasonReportError},
		{"replay first use", job100, auth(replayed), 502, reasonReportError},
		{"replayed", job100, auth(replayed), 401, mungeauth.ReasonReplayed},
		{"expired", job100, auth(expired), 401, mungeauth.ReasonExpired},
		{"wrong key", job100, auth(wrongKey), 401, mungeauth.ReasonInvalid},
		{"forged", job100, auth("MUNGE:AAAAforged:"), 401, mungeauth.ReasonMalformed},
		{"another request", job200, auth(ts.cred(t, 1001, 0, "GET", job100)), 401, mungeauth.ReasonMismatch},
		{"none", job100, nil, 401, mungeauth.ReasonMissing},
		{"basic auth", job100, map[string]string{"Authorization": "Basic YTpi"}, 401, mungeauth.ReasonMalformed},
		{"not the owner", job200, auth(ts.cred(t, 1001, 0, "GET", job200)), 404, reasonForbidden},
		{"coordinator", job100, auth(ts.cred(t, 1003, 0, "GET", job100)), 502, reasonReportError},
		{"coordinator of another account", job200, auth(ts.cred(t, 1003, 0, "GET", job200)), 404, reasonForbidden},
		{"operator", job200, auth(ts.cred(t, 1004, 0, "GET", job200)), 502, reasonReportError},
		{"root", job200, auth(ts.cred(t, 0, 0, "GET", job200)), 502, reasonReportError},
		{"usage of another user", "/v1/usage?user=bob", auth(ts.cred(t, 1001, 0, "GET", "/v1/usage?user=bob")), 403, reasonForbidden},
		{"proxy header from an untrusted peer", "/", map[string]string{"X-Remote-User": "alice"}, 401, mungeauth.ReasonMissing},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := testutil.ToFloat64(ts.decisions.WithLabelValues(decisionOf(c.status), c.reason))
			status, body := ts.get(t, c.path, c.hdr)
			if status != c.status {
				t.Fatalf("status %d, want %d: %s", status, c.status, body)
			}
			if strings.Count(strings.TrimSpace(body), "\n") != 0 {
				t.Errorf("refusal is not one line: %q", body)
			}
			if got := testutil.ToFloat64(ts.decisions.WithLabelValues(decisionOf(c.status), c.reason)); got != before+1 {
				t.Errorf("counter %s/%s went %v -> %v", decisionOf(c.status), c.reason, before, got)
			}
		})
	}
}

func decisionOf(status int) string {
	if status >= 500 && status != 502 {
		return "failed"
	}
	if status == 502 {
		return "failed"
	}
	return "refused"
}

// TestProxyHeader: the browser's user header counts only from a
// configured proxy address, and the job page lists that user's jobs.
func TestProxyHeader(t *testing.T) {
	trusted := startServer(t, ProxyConfig{Header: "X-Remote-User", Trusted: []string{"127.0.0.1/32"}})
	status, body := trusted.get(t, "/", map[string]string{"X-Remote-User": "alice"})
	if status != 200 || !strings.Contains(body, `href="/v1/job/100?format=html"`) || !strings.Contains(body, "Recent jobs of alice") {
		t.Fatalf("%d %s", status, body)
	}
	untrusted := startServer(t, ProxyConfig{Header: "X-Remote-User", Trusted: []string{"10.0.0.0/8"}})
	status, body = untrusted.get(t, "/", map[string]string{"X-Remote-User": "alice"})
	if status != 403 || !strings.Contains(body, "configured proxy only") {
		t.Fatalf("%d %s", status, body)
	}
	status, _ = trusted.get(t, "/v1/job/200?format=html", map[string]string{"X-Remote-User": "alice"})
	if status != 404 {
		t.Fatalf("bob's job for alice through the proxy: %d", status)
	}
	status, _ = trusted.get(t, "/", map[string]string{"X-Remote-User": "alice,bob"})
	if status != 400 {
		t.Fatalf("a list as user name: %d", status)
	}
}

// promQueries is a Prometheus that records the queries it is sent and
// answers none of them.
type promQueries struct {
	mu sync.Mutex
	q  []string
}

func (p *promQueries) RoundTrip(r *http.Request) (*http.Response, error) {
	_ = r.ParseForm()
	p.mu.Lock()
	p.q = append(p.q, r.Form.Get("query")+r.Form.Get("match[]"))
	p.mu.Unlock()
	return nil, errors.New("no Prometheus here")
}

// TestJobReportPinnedToSacctCluster: the access check asked sacct about
// the local cluster; the report must then look only at that cluster's
// series, or a Prometheus holding two clusters hands alice the report of
// bob's job that reused her job id on the other cluster.
func TestJobReportPinnedToSacctCluster(t *testing.T) {
	ts := startServer(t, ProxyConfig{})
	rec := &promQueries{}
	ts.Transport = rec
	const job100 = "/v1/job/100?format=text"
	status, body := ts.get(t, job100, map[string]string{"Authorization": "MUNGE " + ts.cred(t, 1001, 0, "GET", job100)})
	if status != 502 {
		t.Fatalf("status %d: %s", status, body)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.q) == 0 {
		t.Fatal("the report asked Prometheus nothing")
	}
	for _, q := range rec.q {
		if !strings.Contains(q, `cluster="c"`) {
			t.Errorf("query not pinned to sacct's cluster: %s", q)
		}
	}
}

// TestRefusalDoesNotTellJobExists: for a caller who may not read it, an
// existing job of another user and a job id Slurm never knew get the same
// status and the same words.
func TestRefusalDoesNotTellJobExists(t *testing.T) {
	ts := startServer(t, ProxyConfig{})
	ask := func(id string) (int, string) {
		p := "/v1/job/" + id + "?format=text"
		status, body := ts.get(t, p, map[string]string{"Authorization": "MUNGE " + ts.cred(t, 1001, 0, "GET", p)})
		return status, strings.ReplaceAll(body, id, "N")
	}
	s1, b1 := ask("200")
	s2, b2 := ask("999")
	if s1 != s2 || b1 != b2 {
		t.Errorf("bob's job: %d %q; no job: %d %q", s1, b1, s2, b2)
	}
}

// TestNonceReplayedAcrossCredentials: two credentials minted with one
// payload are distinct to munged (each decodes once), so only the
// service's own nonce check refuses the second.
func TestNonceReplayedAcrossCredentials(t *testing.T) {
	ts := startServer(t, ProxyConfig{})
	const job100 = "/v1/job/100?format=text"
	nonce := mungeauth.NewNonce()
	first := ts.credNonce(t, 1001, 0, "GET", job100, nonce)
	second := ts.credNonce(t, 1001, 0, "GET", job100, nonce)
	if status, body := ts.get(t, job100, map[string]string{"Authorization": "MUNGE " + first}); status != 502 {
		t.Fatalf("first: %d %s", status, body)
	}
	status, body := ts.get(t, job100, map[string]string{"Authorization": "MUNGE " + second})
	if status != 401 || !strings.Contains(body, mungeauth.ReasonReplayed) {
		t.Fatalf("second credential with the same nonce: %d %s", status, body)
	}
}

// TestNonceStoreBounded: the store never holds more than maxNonces; full
// of live nonces it refuses, and forgets nonces past their window.
func TestNonceStoreBounded(t *testing.T) {
	var n nonces
	now := time.Unix(1_800_000_000, 0)
	for i := range maxNonces {
		if ok, full := n.fresh(strconv.Itoa(i), now); !ok || full {
			t.Fatalf("nonce %d: ok %v full %v", i, ok, full)
		}
	}
	if ok, full := n.fresh("one more", now); ok || !full {
		t.Fatalf("full store: ok %v full %v", ok, full)
	}
	later := now.Add(mungeauth.NonceWindow)
	if ok, full := n.fresh("one more", later); !ok || full || len(n.seen) != 1 {
		t.Fatalf("after the window: ok %v full %v, %d kept", ok, full, len(n.seen))
	}
}
