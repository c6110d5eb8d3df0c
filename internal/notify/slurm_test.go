// SPDX-License-Identifier: Apache-2.0

package notify

import (
	"errors"
	"testing"
	"time"
)

// A job name that imitates the fields after it cannot change them: the
// delimiter is random and the name is the last field.
func TestParseSqueueHostileName(t *testing.T) {
	d := "|0123456789abcdef|"
	out := "101" + d + "alice" + d + "1001" + d + "RUNNING" + d + "2026-11-21T12:09:43" + d + "x|bob|1002|RUNNING" + d + "bob\n"
	o, err := parseSqueue([]byte(out), "101", d, time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	if o.User != "alice" || o.UID != 1001 || o.State != "RUNNING" || o.Start != time.Date(2026, 11, 21, 12, 9, 43, 0, time.UTC).Unix() {
		t.Errorf("owner %+v", o)
	}
	if _, err := parseSqueue([]byte(out), "10", d, time.UTC); !errors.Is(err, errJobNotFound) {
		t.Errorf("job 10: %v, want not found", err)
	}
}

func TestParseMailUser(t *testing.T) {
	for _, c := range []struct{ line, want string }{
		{"JobId=5 JobName=a UserId=alice(1) Power= MailUser=a@b.example MailType=END", "a@b.example"},
		{"JobId=5 JobName=a UserId=alice(1) Power=", ""},
		{"JobId=5 JobName=x MailUser=e@evil.example MailType=END UserId=alice(1) MailUser=a@b.example MailType=END", ""},
		{"JobId=6 JobName=a MailUser=a@b.example MailType=END", ""},
	} {
		if got := parseMailUser([]byte(c.line), "5"); got != c.want {
			t.Errorf("%q: %q, want %q", c.line, got, c.want)
		}
	}
}

func TestAddresses(t *testing.T) {
	for _, c := range []struct{ user, mailUser, want string }{
		{"alice", "", "alice@example.org"},
		{"alice", "x@y.example", "x@y.example"},
		{"alice", "x@y.example\r\nBcc: z@evil", "alice@example.org"},
		{"alice", "a@b.example, c@d.example", "alice@example.org"},
		{"alice", "alice", "alice@example.org"},
		{"bad\nuser", "", ""},
	} {
		got, _ := ownerAddress("{user}@example.org", c.user, c.mailUser)
		if got != c.want {
			t.Errorf("user %q mail-user %q: %q, want %q", c.user, c.mailUser, got, c.want)
		}
	}
}
