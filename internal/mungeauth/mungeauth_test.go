// SPDX-License-Identifier: Apache-2.0

package mungeauth_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/jobscope/jobscope/internal/mungeauth"
	"github.com/jobscope/jobscope/internal/mungeauth/mungetest"
)

func reason(err error) string {
	var e *mungeauth.Error
	if errors.As(err, &e) {
		return e.Reason
	}
	if err == nil {
		return mungeauth.ReasonOK
	}
	return "not a *mungeauth.Error: " + err.Error()
}

// TestVerifyRealMunged decodes credentials with a private munged: a good one
// passes with the caller's uid, and every kind of bad one is refused with
// its own reason.
func TestVerifyRealMunged(t *testing.T) {
	sock := mungetest.Start(t)
	other := mungetest.Start(t) // another key: the wrong-key case
	ctx := context.Background()
	m := mungeauth.Munge{Socket: sock}
	const path = "/v1/job/42?format=text"
	mint := func(t *testing.T, m mungeauth.Munge, pq string) string {
		t.Helper()
		c, err := m.Credential(ctx, "GET", pq, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		return c
	}

	t.Run("good", func(t *testing.T) {
		id, err := m.Verify(ctx, mint(t, m, path), "GET", path, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if id.UID != os.Getuid() || id.GID != os.Getgid() {
			t.Fatalf("identity %+v, want uid %d gid %d", id, os.Getuid(), os.Getgid())
		}
	})
	t.Run("replayed", func(t *testing.T) {
		c := mint(t, m, path)
		if _, err := m.Verify(ctx, c, "GET", path, time.Now()); err != nil {
			t.Fatal(err)
		}
		if _, err := m.Verify(ctx, c, "GET", path, time.Now()); reason(err) != mungeauth.ReasonReplayed {
			t.Fatalf("second use: %v, want replayed", err)
		}
	})
	t.Run("expired", func(t *testing.T) {
		short := m
		short.TTL = 1
		c := mint(t, short, path)
		time.Sleep(2100 * time.Millisecond)
		if _, err := m.Verify(ctx, c, "GET", path, time.Now()); reason(err) != mungeauth.ReasonExpired {
			t.Fatalf("%v, want expired", err)
		}
	})
	t.Run("wrong key", func(t *testing.T) {
		c := mint(t, mungeauth.Munge{Socket: other}, path)
		if _, err := m.Verify(ctx, c, "GET", path, time.Now()); reason(err) != mungeauth.ReasonInvalid {
			t.Fatalf("%v, want invalid", err)
		}
	})
	t.Run("forged bytes", func(t *testing.T) {
		c := mint(t, m, path)
		// Change one character of the armoured body.
		i := len(c) / 2
		b := []byte(c)
		if b[i] == 'A' {
			b[i] = 'B'
		} else {
			b[i] = 'A'
		}
		if _, err := m.Verify(ctx, string(b), "GET", path, time.Now()); reason(err) != mungeauth.ReasonInvalid &&
			reason(err) != mungeauth.ReasonMalformed {
			t.Fatalf("%v, want invalid or malformed", err)
		}
		for _, bad := range []string{"", "MUNGE:", "hello", "MUNGE:AAAA:", "MUNGE:a b:", strings.Repeat("A", 5000)} {
			if _, err := m.Verify(ctx, bad, "GET", path, time.Now()); reason(err) != mungeauth.ReasonMalformed &&
				reason(err) != mungeauth.ReasonInvalid {
				t.Errorf("%q: %v, want malformed", bad, err)
			}
		}
	})
	t.Run("another request", func(t *testing.T) {
		c := mint(t, m, "/v1/job/43?format=text")
		if _, err := m.Verify(ctx, c, "GET", path, time.Now()); reason(err) != mungeauth.ReasonMismatch {
			t.Fatalf("%v, want mismatch", err)
		}
		c = mint(t, m, path)
		if _, err := m.Verify(ctx, c, "POST", path, time.Now()); reason(err) != mungeauth.ReasonMismatch {
			t.Fatalf("method: %v, want mismatch", err)
		}
	})
	t.Run("foreign payload", func(t *testing.T) {
		// A credential of another service (munge -n: empty payload).
		out, err := exec.Command("munge", "--socket="+sock, "-n").Output()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := m.Verify(ctx, strings.TrimSpace(string(out)), "GET", path, time.Now()); reason(err) != mungeauth.ReasonMismatch {
			t.Fatalf("%v, want mismatch", err)
		}
	})
	t.Run("no munged", func(t *testing.T) {
		gone := mungeauth.Munge{Socket: sock + ".none"}
		if _, err := gone.Verify(ctx, mint(t, m, path), "GET", path, time.Now()); reason(err) != mungeauth.ReasonUnavailable {
			t.Fatalf("%v, want unavailable", err)
		}
	})
}

// BenchmarkRoundTrip is what MUNGE adds to one report request: munge on
// the client, unmunge on the server (two program runs and two munged
// round trips).
func BenchmarkRoundTrip(b *testing.B) {
	sock := mungetest.Start(b)
	m := mungeauth.Munge{Socket: sock}
	ctx := context.Background()
	for b.Loop() {
		c, err := m.Credential(ctx, "GET", "/v1/job/1", time.Now())
		if err != nil {
			b.Fatal(err)
		}
		if _, err := m.Verify(ctx, c, "GET", "/v1/job/1", time.Now()); err != nil {
			b.Fatal(err)
		}
	}
}
