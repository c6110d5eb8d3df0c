// SPDX-License-Identifier: Apache-2.0

package notify

import (
	"bytes"
	"crypto/sha256"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

const goodBody = `{"version":"4","status":"firing","receiver":"jobscope","groupLabels":{},"alerts":[
{"status":"firing","labels":{"alertname":"JobscopeJobGPUIdle","jobid":"101","job_key":"c1/101/1799990000","cluster":"c1",
"severity":"warning","user":"victim"},"annotations":{"summary":"GPU idle","value":"GPU 0 idle 2h","value_raw":"0"},
"startsAt":"2026-11-27T08:00:00Z","endsAt":"0001-01-01T00:00:00Z","fingerprint":"x"}]}`

func newTestHandler() (*handler, chan []Alert) {
	m := newMetrics()
	inbox := make(chan []Alert, 1)
	ol := newOnceLog(slog.New(slog.NewTextHandler(io.Discard, nil)), m)
	return &handler{token: sha256.Sum256([]byte("s3cret")), m: m, inbox: inbox, once: ol.report}, inbox
}

func TestWebhookAuth(t *testing.T) {
	h, inbox := newTestHandler()
	srv := httptest.NewServer(newMux(h)) // 127.0.0.1, a free port
	defer srv.Close()
	for _, c := range []struct {
		name, auth string
		want       int
	}{
		{"missing", "", http.StatusUnauthorized},
		{"wrong", "Bearer s3cre", http.StatusUnauthorized},
		{"basic", "Basic czNjcmV0", http.StatusUnauthorized},
		{"right", "Bearer s3cret", http.StatusOK},
	} {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/alertmanager", strings.NewReader(goodBody))
		if c.auth != "" {
			req.Header.Set("Authorization", c.auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("%s token: status %d, want %d", c.name, resp.StatusCode, c.want)
		}
	}
	if got := testutil.ToFloat64(h.m.errors.WithLabelValues(causeUnauthorized)); got != 3 {
		t.Errorf("unauthorized counted %v, want 3", got)
	}
	select {
	case alerts := <-inbox:
		if len(alerts) != 1 || alerts[0].JobID != "101" || alerts[0].JobKey != "c1/101/1799990000" {
			t.Errorf("alerts %+v", alerts)
		}
	default:
		t.Fatal("the authorized call reached no inbox")
	}
}

func TestWebhookBadBodies(t *testing.T) {
	h, _ := newTestHandler()
	for _, c := range []struct {
		name, body string
		want       int
	}{
		{"too large", `{"version":"4","alerts":[],"x":"` + strings.Repeat("a", maxBody) + `"}`, http.StatusRequestEntityTooLarge},
		{"version", strings.Replace(goodBody, `"4"`, `"3"`, 1), http.StatusBadRequest},
		{"not json", "hello", http.StatusBadRequest},
		{"trailing", goodBody + "{}", http.StatusBadRequest},
	} {
		req := httptest.NewRequest(http.MethodPost, "/alertmanager", bytes.NewBufferString(c.body))
		req.Header.Set("Authorization", "Bearer s3cret")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != c.want {
			t.Errorf("%s: status %d, want %d", c.name, w.Code, c.want)
		}
	}
}

// Alerts with a job id that is not a plain number, or without a job_key,
// are skipped (counted), never passed to Slurm's commands.
func TestAlertChecks(t *testing.T) {
	for _, id := range []string{"-1", "1 2", "--help", "12;rm", "0", "1_2", ""} {
		body := strings.Replace(goodBody, `"jobid":"101"`, `"jobid":"`+id+`"`, 1)
		alerts, bad, err := decodePayload(strings.NewReader(body))
		if err != nil || len(alerts) != 0 || len(bad) != 1 {
			t.Errorf("jobid %q: alerts %v, bad %v, err %v", id, alerts, bad, err)
		}
	}
	alerts, _, err := decodePayload(strings.NewReader(goodBody))
	if err != nil || len(alerts) != 1 || alerts[0].Value != "GPU 0 idle 2h" {
		t.Errorf("good body: %+v %v", alerts, err)
	}
}

func FuzzDecodePayload(f *testing.F) {
	f.Add([]byte(goodBody))
	f.Add([]byte(`{"version":"4","alerts":[{"status":"resolved","labels":{"alertname":"A","jobid":"1","job_key":"k"}}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		alerts, _, err := decodePayload(bytes.NewReader(b))
		if err != nil {
			return
		}
		for _, a := range alerts {
			if !validJobID(a.JobID) || !validAlertName(a.Name) || textSafe(a.JobKey) != a.JobKey {
				t.Fatalf("unchecked alert passed: %+v", a)
			}
		}
	})
}

// The shipped example parses as it is (the token file is read at start,
// not here), and dry_run is on unless a site turns it off.
func TestExampleConfig(t *testing.T) {
	b, err := os.ReadFile("../../contrib/notify/notify.yml")
	if err != nil {
		t.Fatal(err)
	}
	c, err := ParseConfig(b)
	if err != nil {
		t.Fatal(err)
	}
	if !*c.DryRun || len(c.Actions) != 0 {
		t.Errorf("example: dry_run %v, actions %v; want dry run and no action", *c.DryRun, c.Actions)
	}
	if _, err := ParseConfig(append(b, []byte("\nsmtp_host: x\n")...)); err == nil {
		t.Error("an unknown key was accepted")
	}
	if _, err := ParseConfig([]byte("smtp: {from: a@b.example}\naddress_template: \"{user}@x.example\"\n")); err == nil {
		t.Error("a config without webhook_token_file was accepted")
	}
}
