// SPDX-License-Identifier: Apache-2.0

package report

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jobscope/jobscope/internal/mungeauth"
	"github.com/jobscope/jobscope/internal/mungeauth/mungetest"
)

// TestRemoteReport: with `service:` in report.yml, jobscope report sends a
// MUNGE credential bound to its request, needs no Prometheus settings,
// prints the service's text through termsafe (keeping only colour codes),
// and prints a refusal as one line with a non-zero exit.
func TestRemoteReport(t *testing.T) {
	sock := mungetest.Start(t)
	m := mungeauth.Munge{Socket: sock}
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		scheme, cred, _ := strings.Cut(r.Header.Get("Authorization"), " ")
		id, err := m.Verify(r.Context(), cred, r.Method, r.URL.RequestURI(), time.Now())
		if scheme != mungeauth.Scheme || err != nil || id.UID != os.Getuid() {
			w.WriteHeader(401)
			_, _ = w.Write([]byte("credential refused\n"))
			return
		}
		seen = append(seen, r.URL.RequestURI())
		if strings.HasPrefix(r.URL.Path, "/v1/job/200") {
			w.Header().Set(ExitHeader, "1")
			w.WriteHeader(403)
			_, _ = w.Write([]byte("job 200 is not yours\nsecond line\n"))
			return
		}
		_, _ = w.Write([]byte("\x1b[1;31mCRITICAL\x1b[0m job name \x1b]0;owned\a\x1b[2J\n"))
	}))
	defer srv.Close()
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "report.yml")
	if err := os.WriteFile(cfgPath, []byte("service: "+srv.URL+"\nmunge_socket: "+sock+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := mainWith(context.Background(), append([]string{"--config", cfgPath}, args...), &out, &errb, false, Options{})
		return code, out.String(), errb.String()
	}
	code, out, errOut := run("--color=always", "100")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, "\x1b[1;31mCRITICAL\x1b[0m") || strings.Contains(out, "\x1b]") || strings.Contains(out, "\x1b[2J") ||
		!strings.Contains(out, "␛]0;owned␇␛[2J") {
		t.Fatalf("output %q", out)
	}
	if len(seen) != 1 || seen[0] != "/v1/job/100?color=1&format=text&reused=ask" {
		t.Fatalf("requests %q", seen)
	}
	code, out, errOut = run("200")
	if code != ExitFailed || out != "" || errOut != "jobscope report: job 200 is not yours\n" {
		t.Fatalf("refusal: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}
