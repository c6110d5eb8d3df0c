// SPDX-License-Identifier: Apache-2.0

package report

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/jobscope/jobscope/internal/mungeauth"
	"github.com/jobscope/jobscope/internal/termsafe"
)

// maxRemoteBody bounds what the client reads of one answer (an HTML page
// with its charts is a few MiB).
const maxRemoteBody = 64 << 20

// ExitHeader carries the report's exit status with a refusal or failure,
// so a remote report exits as a local one would.
const ExitHeader = "X-Jobscope-Exit"

// validService accepts an http(s) URL or an absolute unix socket path.
func validService(s string) error {
	if s == "" || strings.HasPrefix(s, "/") {
		return nil
	}
	if u, err := url.Parse(s); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("service %q: want http(s)://host:port or a unix socket's path", s)
	}
	return nil
}

// WriteJSON is the report's JSON form, for the service.
func WriteJSON(w io.Writer, v any) error { return writeJSON(w, v) }

// ExitFor is the exit status a report error gives, for the service.
func ExitFor(err error) int { return exitFor(err) }

// remote asks the report service; base is the URL requests are made on.
type remote struct {
	client *http.Client
	base   string
	munge  mungeauth.Munge
}

func newRemote(cfg Config) *remote {
	r := &remote{base: strings.TrimSuffix(cfg.Service, "/"), munge: mungeauth.Munge{Socket: cfg.MungeSocket}}
	tr := &http.Transport{Proxy: nil, ResponseHeaderTimeout: 10 * time.Minute}
	if strings.HasPrefix(cfg.Service, "/") {
		sock := cfg.Service
		tr.DialContext = func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", sock)
		}
		r.base = "http://unix"
	}
	r.client = &http.Client{Transport: tr, Timeout: 10 * time.Minute}
	return r
}

// get makes one request with a credential bound to it; a refusal or a
// failure comes back as a one-line error with its exit status.
func (r *remote) get(ctx context.Context, pathQuery string) ([]byte, int, error) {
	cred, err := r.munge.Credential(ctx, http.MethodGet, pathQuery, time.Now())
	if err != nil {
		return nil, ExitFailed, fmt.Errorf("report service: cannot make a MUNGE credential: %v", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.base+pathQuery, nil)
	if err != nil {
		return nil, ExitUsage, err
	}
	req.Header.Set("Authorization", mungeauth.Scheme+" "+cred)
	resp, err := r.client.Do(req)
	if err != nil {
		return nil, ExitFailed, fmt.Errorf("report service: %v", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxRemoteBody+1))
	switch {
	case err != nil:
		return nil, ExitFailed, fmt.Errorf("report service: %v", err)
	case len(body) > maxRemoteBody:
		return nil, ExitFailed, fmt.Errorf("report service: answer over %d bytes", maxRemoteBody)
	case resp.StatusCode != http.StatusOK:
		code, err := strconv.Atoi(resp.Header.Get(ExitHeader))
		if err != nil || code < 1 || code > 3 {
			code = ExitFailed
		}
		msg := clip(firstLine(string(body)), 300)
		if msg == "" {
			msg = resp.Status
		}
		return nil, code, fmt.Errorf("%s", strings.TrimPrefix(msg, "jobscope report: "))
	}
	return body, ExitOK, nil
}

// runRemote is `jobscope report` when the site runs the report service.
func runRemote(ctx context.Context, cfg Config, f *cliFlags, ids []string, stdout, stderr io.Writer, color bool) int {
	r := newRemote(cfg)
	q := url.Values{"format": {f.format}}
	if color {
		q.Set("color", "1")
	}
	if len(ids) == 0 {
		for k, v := range map[string]string{"user": f.user, "account": f.account, "partition": f.partition,
			"since": f.since, "until": f.until} {
			if v != "" {
				q.Set(k, v)
			}
		}
		if f.jobs > 0 {
			q.Set("jobs", strconv.Itoa(f.jobs))
		}
		body, code, err := r.get(ctx, "/v1/usage?"+q.Encode())
		if err != nil {
			fmt.Fprintf(stderr, "jobscope report: %v\n", err)
			return code
		}
		return remoteOut(f.output, body, stdout, stderr, color)
	}
	for k, v := range map[string]string{"job_key": f.jobKey, "reused": f.reused} {
		if v != "" {
			q.Set(k, v)
		}
	}
	if f.ended {
		q.Set("ended", "1")
	}
	status := ExitOK
	var buf bytes.Buffer
	var jsons [][]byte
	for _, id := range ids {
		body, code, err := r.get(ctx, "/v1/job/"+url.PathEscape(id)+"?"+q.Encode())
		if err != nil {
			fmt.Fprintf(stderr, "jobscope report: %v\n", err)
			status = max(status, code)
			continue
		}
		switch {
		case f.format == "json":
			jsons = append(jsons, bytes.TrimSpace(body))
		case f.format == "html" && strings.Contains(f.output, "%j"):
			if c := remoteOut(strings.ReplaceAll(f.output, "%j", id), body, stdout, stderr, false); c != ExitOK {
				status = max(status, c)
			}
		default:
			if buf.Len() > 0 && f.format == "text" {
				buf.WriteString("\n" + strings.Repeat("=", Width) + "\n\n")
			}
			buf.Write(body)
		}
	}
	if len(jsons) > 1 {
		buf.WriteString("[\n" + string(bytes.Join(jsons, []byte(",\n"))) + "\n]\n")
	} else if len(jsons) == 1 {
		buf.Write(append(jsons[0], '\n'))
	}
	if buf.Len() > 0 {
		status = max(status, remoteOut(strings.ReplaceAll(f.output, "%j", strings.Join(ids, "-")), buf.Bytes(),
			stdout, stderr, color))
	}
	return status
}

// remoteOut writes what the service sent. What reaches a terminal passes
// termsafe line by line, whatever the service sent: with colour asked for,
// only plain SGR colour and weight sequences are kept.
func remoteOut(path string, body []byte, stdout, stderr io.Writer, color bool) int {
	if path == "" || path == "-" {
		body = remoteSafe(body, color)
	}
	if err := writeOut(path, body, stdout); err != nil {
		fmt.Fprintf(stderr, "jobscope report: %v\n", err)
		return ExitFailed
	}
	return ExitOK
}

// sgr matches the colour and weight sequences the text writer uses.
var sgr = regexp.MustCompile(`\x1b\[(?:0|1|2|22|3[0-79]|9[0-7])?(?:;(?:0|1|2|22|3[0-79]|9[0-7]))*m`)

func remoteSafe(b []byte, color bool) []byte {
	lines := strings.Split(string(b), "\n")
	for i, l := range lines {
		if !color {
			lines[i] = termsafe.String(l)
			continue
		}
		var sb strings.Builder
		last := 0
		for _, m := range sgr.FindAllStringIndex(l, -1) {
			sb.WriteString(termsafe.String(l[last:m[0]]))
			sb.WriteString(l[m[0]:m[1]])
			last = m[1]
		}
		sb.WriteString(termsafe.String(l[last:]))
		lines[i] = sb.String()
	}
	return []byte(strings.Join(lines, "\n"))
}

// ParseWhen reads --since/--until as the report does, for the service.
func ParseWhen(s string, ref time.Time, loc *time.Location) (time.Time, error) {
	return parseWhen(s, ref, loc)
}
