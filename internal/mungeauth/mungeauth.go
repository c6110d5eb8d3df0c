// SPDX-License-Identifier: Apache-2.0

// Package mungeauth proves a caller's uid to the report service with a
// MUNGE credential. It runs the munge and unmunge programs (never libmunge
// through cgo, so the static build works) and binds each credential to one
// HTTP request: the payload names the method, the path and query, a random
// nonce and the time, so a credential seen on the wire is good for that
// request only, and munged refuses it the second time (replay).
package mungeauth

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jobscope/jobscope/internal/cmdrun"
)

// Scheme is the Authorization header's scheme: "MUNGE <credential>".
const Scheme = "MUNGE"

// magic starts every payload, so a credential minted for another service
// (whose payload is its own) never passes for a report request.
const magic = "jobscope-report-v1"

// maxCredential bounds the credential a server reads: a payload of a few
// hundred bytes armours to well under this.
const maxCredential = 4096

// maxSkew is how far the payload's time may be from the server's clock; munged
// enforces the credential's own TTL, this only refuses a payload made
// long before its credential.
const maxSkew = 5 * time.Minute

// Reasons a credential is refused, for the decision counter. Each munge
// status maps to one (munge.h's munge_err_t).
const (
	ReasonOK           = "ok"
	ReasonMissing      = "missing"      // no Authorization header of this scheme
	ReasonMalformed    = "malformed"    // not a credential, or bytes changed
	ReasonInvalid      = "invalid"      // munged could not decode it: another key, tampered
	ReasonExpired      = "expired"      // its TTL is over
	ReasonRewound      = "rewound"      // made in the future: a clock set back
	ReasonReplayed     = "replayed"     // munged decoded it before
	ReasonUnauthorized = "unauthorized" // restricted to another uid or gid
	ReasonMismatch     = "mismatch"     // the payload binds another request
	ReasonUnavailable  = "unavailable"  // munged or unmunge could not be asked
)

// Identity is what munged vouches for.
type Identity struct {
	UID, GID int
	// Nonce is the payload's nonce: the server refuses a second request
	// with one (munged refuses a second decode of one credential only,
	// and only its own, in memory, until it restarts).
	Nonce string
}

// NonceWindow is how long a nonce must be remembered: past it, the
// payload's time is refused anyway.
const NonceWindow = 2 * maxSkew

// Error is a refused credential: Reason is one of the Reason constants.
type Error struct {
	Reason string
	Detail string
}

func (e *Error) Error() string { return "munge credential " + e.Reason + ": " + e.Detail }

// Munge runs munge and unmunge; empty fields take the programs from PATH
// and munged's default socket.
type Munge struct {
	MungePath, UnmungePath string
	Socket                 string
	Timeout                time.Duration // per run; 0 means 5s
	// TTL is the credential's time to live in seconds (munge -t); 0 is
	// munged's default.
	TTL int
}

func (m Munge) timeout() time.Duration {
	if m.Timeout > 0 {
		return m.Timeout
	}
	return 5 * time.Second
}

func (m Munge) socketArgs() []string {
	if m.Socket == "" {
		return nil
	}
	return []string{"--socket=" + m.Socket}
}

func path(p, def string) string {
	if p != "" {
		return p
	}
	return def
}

// Payload is the text a credential binds a request with.
func Payload(method, pathQuery, nonce string, t time.Time) string {
	return magic + "\n" + method + "\n" + pathQuery + "\n" + nonce + "\n" + strconv.FormatInt(t.Unix(), 10) + "\n"
}

// NewNonce is 16 random bytes in hex.
func NewNonce() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails (it aborts the program instead)
	return hex.EncodeToString(b[:])
}

// Credential mints a credential for one request (the client's side).
func (m Munge) Credential(ctx context.Context, method, pathQuery string, now time.Time) (string, error) {
	args := append(m.socketArgs(), "--input=/dev/stdin")
	if m.TTL != 0 {
		args = append(args, "--ttl="+strconv.Itoa(m.TTL))
	}
	res, err := cmdrun.Run(ctx, cmdrun.Spec{
		Path: path(m.MungePath, "munge"), Args: args, Timeout: m.timeout(),
		Stdin: strings.NewReader(Payload(method, pathQuery, NewNonce(), now)), MaxStdout: maxCredential, MaxStderr: 1024,
	})
	if err != nil {
		return "", fmt.Errorf("munge: %w %s", err, firstLine(res.Stderr))
	}
	return strings.TrimSpace(string(res.Stdout)), nil
}

// Verify decodes cred with unmunge and checks that it binds this request
// (the server's side). Every refusal is an *Error.
func (m Munge) Verify(ctx context.Context, cred, method, pathQuery string, now time.Time) (Identity, error) {
	if len(cred) > maxCredential || !strings.HasPrefix(cred, "MUNGE:") || !strings.HasSuffix(cred, ":") ||
		strings.ContainsFunc(cred, func(r rune) bool { return r <= ' ' || r > '~' }) {
		return Identity{}, &Error{ReasonMalformed, "not a MUNGE credential"}
	}
	args := append(m.socketArgs(), "--numeric", "--keys=STATUS,UID,GID")
	res, err := cmdrun.Run(ctx, cmdrun.Spec{
		Path: path(m.UnmungePath, "unmunge"), Args: args, Timeout: m.timeout(),
		Stdin: strings.NewReader(cred + "\n"), MaxStdout: maxCredential, MaxStderr: 1024,
	})
	if res.Cause == cmdrun.Exit {
		return Identity{}, &Error{statusReason(res.ExitCode), firstLine(res.Stderr)}
	}
	if err != nil {
		return Identity{}, &Error{ReasonUnavailable, fmt.Sprintf("unmunge: %v %s", err, firstLine(res.Stderr))}
	}
	id, payload, err := parseUnmunge(res.Stdout)
	if err != nil {
		return Identity{}, &Error{ReasonUnavailable, "unmunge: " + err.Error()}
	}
	nonce, err := checkPayload(payload, method, pathQuery, now)
	if err != nil {
		return Identity{}, &Error{ReasonMismatch, err.Error()}
	}
	id.Nonce = nonce
	return id, nil
}

// statusReason maps unmunge's exit status (munge_err_t) to a reason.
func statusReason(code int) string {
	switch code {
	case 8, 9, 10, 11, 12, 13: // bad credential, version, cipher, MAC, zip, realm
		return ReasonMalformed
	case 14:
		return ReasonInvalid
	case 15:
		return ReasonExpired
	case 16:
		return ReasonRewound
	case 17:
		return ReasonReplayed
	case 18:
		return ReasonUnauthorized
	}
	// 1-7: munged's own failures (socket, timeout, memory): not the
	// caller's fault, but no identity either.
	return ReasonUnavailable
}

// parseUnmunge reads `unmunge --numeric --keys=STATUS,UID,GID`: "KEY: value"
// lines, a blank line, then the payload.
func parseUnmunge(out []byte) (Identity, []byte, error) {
	meta, payload, ok := bytes.Cut(out, []byte("\n\n"))
	if !ok {
		return Identity{}, nil, errors.New("no end of metadata")
	}
	id, seen := Identity{UID: -1, GID: -1}, 0
	for _, l := range strings.Split(string(meta), "\n") {
		k, v, ok := strings.Cut(l, ":")
		if !ok {
			continue
		}
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil {
			return Identity{}, nil, fmt.Errorf("%s is not a number", k)
		}
		switch strings.TrimSpace(k) {
		case "STATUS":
			if n != 0 {
				return Identity{}, nil, fmt.Errorf("status %d with exit status 0", n)
			}
			seen++
		case "UID":
			id.UID = n
			seen++
		case "GID":
			id.GID = n
			seen++
		}
	}
	if seen != 3 || id.UID < 0 || id.GID < 0 {
		return Identity{}, nil, errors.New("STATUS, UID or GID missing")
	}
	return id, payload, nil
}

// checkPayload says whether payload binds this request at about now.
func checkPayload(payload []byte, method, pathQuery string, now time.Time) (string, error) {
	f := strings.Split(string(payload), "\n")
	if len(f) != 6 || f[0] != magic || f[5] != "" {
		return "", errors.New("payload is not a report request")
	}
	if f[1] != method || f[2] != pathQuery {
		return "", errors.New("payload binds another request")
	}
	if len(f[3]) != 32 {
		return "", errors.New("payload nonce")
	}
	sec, err := strconv.ParseInt(f[4], 10, 64)
	if err != nil {
		return "", errors.New("payload time")
	}
	if d := now.Sub(time.Unix(sec, 0)); d > maxSkew || d < -maxSkew {
		return "", fmt.Errorf("payload time %s off", d.Round(time.Second))
	}
	return f[3], nil
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	if len(l) > 200 {
		l = l[:200]
	}
	return l
}
