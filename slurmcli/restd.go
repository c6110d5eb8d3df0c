// SPDX-License-Identifier: Apache-2.0

package slurmcli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"time"
)

// RestdVersions are the data_parser versions of slurmrestd's /slurm/<v>/
// paths this client reads, newest first: v0.0.38 is 22.05's (the shape of
// its `squeue --json` and `sinfo --json`), v0.0.39 23.02's, v0.0.40 to
// v0.0.42 those of 23.11 to 24.11 (24.11.5 serves v0.0.40 to v0.0.42),
// v0.0.41 to v0.0.45 those of 25.05 to 26.05 (26.05 serves v0.0.42 to
// v0.0.45; each is read in testdata/slurm/*/restd-*.json). The jobs and nodes they print are the data_parser output the
// commands print with --json (see restd_source.go), so the command
// source's decoders read them.
var RestdVersions = []string{"v0.0.45", "v0.0.44", "v0.0.43", "v0.0.42", "v0.0.41", "v0.0.40", "v0.0.39", "v0.0.38"}

// DefaultRestdURL is slurmrestd's socket where its systemd unit is set to
// listen on a unix socket (rest_auth/local: the caller's uid is the
// identity, no token).
const DefaultRestdURL = "unix:///run/slurmrestd/slurmrestd.socket"

// Counter names of slurmrestd's requests in the command runner's Stats
// (jobscope_slurm_command_*{command=...}): one per path jobscope asks.
const (
	RestdPing  = "slurmrestd:ping"
	RestdJobs  = "slurmrestd:jobs"
	RestdNodes = "slurmrestd:nodes"
)

// restdErrBody is how much of a failed answer's body is read for its
// message: Slurm's errors list is short; the rest is not read.
const restdErrBody = 4096

// restdTokenMax bounds the token file: a JWT is a few hundred bytes.
const restdTokenMax = 64 << 10

// RestdConfig configures a Restd client.
type RestdConfig struct {
	// URL is unix:///path/to/socket, or http(s)://host:port.
	URL string
	// TokenFile, when set, holds a JWT sent as X-SLURM-USER-TOKEN; it is
	// read at each request (tokens are renewed by whoever writes it) and
	// never logged.
	TokenFile string
	// Versions to probe, newest first (nil: RestdVersions).
	Versions []string
	// Timeout bounds one request, body included (0: 30s), as the command
	// timeout bounds a command.
	Timeout time.Duration
	// MaxBody bounds a body in bytes (0: the command runner's stdout
	// limit), so a runaway answer cannot exhaust the exporter's memory.
	MaxBody int
	Logger  *slog.Logger
}

// Restd asks slurmrestd. Requests are counted in a command runner's Stats
// beside the commands (jobscope_slurm_command_*), with the same causes:
// start (no connection), timeout, exit (an HTTP error status), too_large,
// parse, canceled.
type Restd struct {
	cfg    RestdConfig
	base   string // scheme://host of every request
	client *http.Client
	stats  *Stats

	mu      sync.Mutex
	version string // the probed data_parser version; "" until one answers
}

// ParseRestdURL checks a --slurm.restd.url value: a unix socket's
// absolute path, or an http(s) address without path, query or user.
func ParseRestdURL(s string) (socket string, base string, err error) {
	u, err := url.Parse(s)
	if err != nil {
		return "", "", err
	}
	switch u.Scheme {
	case "unix":
		if u.Host != "" || !strings.HasPrefix(u.Path, "/") {
			return "", "", fmt.Errorf("%q: want unix:///absolute/path", s)
		}
		// The host name is not used over a socket; slurmrestd reads
		// only the path.
		return u.Path, "http://slurmrestd", nil
	case "http", "https":
		if u.Host == "" || u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
			return "", "", fmt.Errorf("%q: want %s://host:port, no path, user or query", s, u.Scheme)
		}
		return "", u.Scheme + "://" + u.Host, nil
	}
	return "", "", fmt.Errorf("%q: want unix:///path or http://host:port", s)
}

// NewRestd builds a client counting its requests in stats.
func NewRestd(cfg RestdConfig, stats *Stats) (*Restd, error) {
	socket, base, err := ParseRestdURL(cfg.URL)
	if err != nil {
		return nil, err
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 30 * time.Second
	}
	if cfg.MaxBody <= 0 {
		cfg.MaxBody = defaultMaxOutput
	}
	if len(cfg.Versions) == 0 {
		cfg.Versions = RestdVersions
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	tr := &http.Transport{
		// Never through a proxy from the environment: the token and
		// the cluster's jobs go to slurmrestd only.
		Proxy:                  nil,
		MaxResponseHeaderBytes: 64 << 10,
		IdleConnTimeout:        90 * time.Second,
		MaxIdleConnsPerHost:    2,
	}
	if socket != "" {
		var d net.Dialer
		tr.DialContext = func(ctx context.Context, _, _ string) (net.Conn, error) {
			return d.DialContext(ctx, "unix", socket)
		}
	}
	return &Restd{cfg: cfg, base: base, stats: stats, client: &http.Client{
		Transport: tr,
		// A redirect would send the token elsewhere: it is an answer
		// like any other non-200.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}, nil
}

// HTTPError is slurmrestd's answer with a status other than 200.
type HTTPError struct {
	Path   string
	Status int
	// Message is Slurm's first error (or the body's start), quoted.
	Message string
}

func (e *HTTPError) Error() string {
	return fmt.Sprintf("slurmrestd %s: HTTP %d %s: %s", e.Path, e.Status, http.StatusText(e.Status), e.Message)
}

// errNotModified is slurmrestd's 304: slurmctld said nothing changed
// since update_time (SLURM_NO_CHANGE_IN_DATA from the handler).
var errNotModified = errors.New("slurmrestd: not modified since update_time")

// errRestdTimeout ends a request at its timeout.
var errRestdTimeout = errors.New("slurmrestd request timed out (--slurm.command-timeout)")

// errTooLarge marks a body over MaxBody.
var errTooLarge = errors.New("slurmrestd answer over the size limit")

// Version returns the data_parser version slurmrestd answers, probing
// RestdVersions newest first (GET /slurm/<v>/ping) until one answers 200;
// the answer is kept, and logged once. A probe where none answers is an
// error, and the next call probes again.
func (r *Restd) Version(ctx context.Context) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.version != "" {
		return r.version, nil
	}
	var tried []string
	for _, v := range r.cfg.Versions {
		err := r.probe(ctx, v)
		var he *HTTPError
		switch {
		case err == nil:
			r.version = v
			r.cfg.Logger.Info("slurmrestd answers; reading jobs and nodes from it", "url", r.cfg.URL, "data_parser", v)
			return v, nil
		case errors.As(err, &he):
			// Not this version (404), or no permission (401/403: the
			// same for every version, but cheap to try).
			tried = append(tried, fmt.Sprintf("%s: %d", v, he.Status))
		default:
			return "", err // no connection, timeout: no version is better
		}
	}
	// The probe as a whole failed: one error, whatever each version said.
	r.stats.record(RestdPing, 0, CauseExit)
	return "", fmt.Errorf("slurmrestd at %s answers none of the data_parser versions jobscope reads (%s)", r.cfg.URL, strings.Join(tried, ", "))
}

// probe asks one version's ping. A 404 is the expected answer for a
// version this slurmrestd does not serve (22.05 answers three of the
// seven so): it is counted as a request, not as an error, so the error
// counter means "slurmrestd failed us" and alerts on it stay quiet.
func (r *Restd) probe(ctx context.Context, v string) error {
	return r.get(ctx, RestdPing, "/slurm/"+v+"/ping", nil, func(io.Reader) error { return nil }, http.StatusNotFound)
}

// forget drops the probed version after a 404 (slurmrestd upgraded and
// the version removed): the next request probes again.
func (r *Restd) forget(v string) {
	r.mu.Lock()
	if r.version == v {
		r.version = ""
	}
	r.mu.Unlock()
}

// get asks path, counted as name, and hands a 200's body to consume as it
// comes (bounded by MaxBody); other statuses are an *HTTPError, 304 is
// errNotModified. consume's own error comes back as it is, counted as a
// parse error. Statuses in expected still come back as an *HTTPError but
// are not counted as errors.
func (r *Restd) get(ctx context.Context, name, path string, query url.Values, consume func(io.Reader) error, expected ...int) (err error) {
	start := time.Now()
	cause := ""
	defer func() { r.stats.record(name, time.Since(start), cause) }()
	ctx, cancel := context.WithTimeoutCause(ctx, r.cfg.Timeout, errRestdTimeout)
	defer cancel()
	u := r.base + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		cause = CauseStart
		return err
	}
	req.Header.Set("Accept", "application/json")
	if r.cfg.TokenFile != "" {
		tok, err := readToken(r.cfg.TokenFile)
		if err != nil {
			cause = CauseStart
			return err
		}
		req.Header.Set("X-SLURM-USER-TOKEN", tok)
	}
	resp, err := r.client.Do(req)
	if err != nil {
		cause = ctxCause(ctx, CauseStart)
		return fmt.Errorf("slurmrestd %s: %w", path, ctxErr(ctx, err))
	}
	defer func() { _ = resp.Body.Close() }()
	switch {
	case resp.StatusCode == http.StatusNotModified:
		return errNotModified
	case resp.StatusCode != http.StatusOK:
		if !slices.Contains(expected, resp.StatusCode) {
			cause = CauseExit
		}
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, restdErrBody))
		return &HTTPError{Path: path, Status: resp.StatusCode, Message: errorMessage(msg)}
	}
	body := &capReader{r: resp.Body, left: int64(r.cfg.MaxBody)}
	perr := consume(body)
	switch {
	case body.over:
		cause = CauseTooLarge
		return fmt.Errorf("slurmrestd %s: %w (%d bytes)", path, errTooLarge, r.cfg.MaxBody)
	case body.err != nil:
		// The connection failed or the deadline came mid-body: whatever
		// consume made of the part it got is not the answer.
		cause = ctxCause(ctx, CauseStart)
		return fmt.Errorf("slurmrestd %s: %w", path, ctxErr(ctx, body.err))
	case perr != nil:
		cause = CauseParse
		return perr
	}
	return nil
}

// ctxCause says why a request failed: its deadline, the exporter's
// shutdown, or else def.
func ctxCause(ctx context.Context, def string) string {
	switch {
	case errors.Is(context.Cause(ctx), errRestdTimeout):
		return CauseTimeout
	case ctx.Err() != nil:
		return CauseCanceled
	}
	return def
}

func ctxErr(ctx context.Context, err error) error {
	if c := context.Cause(ctx); c != nil {
		return c
	}
	return err
}

// readToken reads a JWT: one line, bounded, no control characters (a
// header value cannot hold them).
func readToken(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("slurmrestd token file: %w", err)
	}
	defer func() { _ = f.Close() }()
	b, err := io.ReadAll(io.LimitReader(f, restdTokenMax+1))
	if err != nil {
		return "", fmt.Errorf("slurmrestd token file: %w", err)
	}
	tok := strings.TrimSpace(string(b))
	switch {
	case len(b) > restdTokenMax:
		return "", fmt.Errorf("slurmrestd token file %s: over %d bytes", path, restdTokenMax)
	case tok == "":
		return "", fmt.Errorf("slurmrestd token file %s is empty", path)
	case strings.ContainsFunc(tok, func(c rune) bool { return c < 0x21 || c > 0x7e }):
		// The token's value stays out of the error: it goes to the log.
		return "", fmt.Errorf("slurmrestd token file %s: not one printable line", path)
	}
	return tok, nil
}

// errorMessage is Slurm's first error of a failed answer, or the body's
// start, quoted: what slurmrestd echoes may hold a caller's text.
func errorMessage(body []byte) string {
	var e struct {
		Errors slurmErrors `json:"errors"`
	}
	if json.Unmarshal(body, &e) == nil && len(e.Errors) > 0 {
		m := e.Errors[0].Description
		if m == "" {
			m = e.Errors[0].Error
		}
		return fmt.Sprintf("%q", clip(m))
	}
	return fmt.Sprintf("%q", clip(string(body)))
}

// clip keeps the start of a message for a log line.
func clip(s string) string {
	const keep = 256
	if len(s) > keep {
		return s[:keep] + "..."
	}
	return s
}

// capReader reads at most left bytes; more sets over and ends the read.
// err keeps a read error of the body (not EOF).
type capReader struct {
	r    io.Reader
	left int64
	over bool
	err  error
}

func (c *capReader) Read(p []byte) (int, error) {
	if c.left <= 0 {
		// One byte more tells a body of exactly the limit from a longer
		// one.
		var one [1]byte
		n, err := c.r.Read(one[:])
		if n > 0 {
			c.over = true
			return 0, errTooLarge
		}
		return 0, err
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	if err != nil && !errors.Is(err, io.EOF) {
		c.err = err
	}
	return n, err
}
