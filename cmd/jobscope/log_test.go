// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/jobscope/jobscope/internal/termsafe"
)

// handlerSGR is the colour codes tint writes itself (faint, reset, the
// level colours): what may stay of ESC once a line is written.
var handlerSGR = regexp.MustCompile(`\x1b\[[0-9;]*m`)

// A job's user writes SLURM_JOB_USER, job names and paths; discovery logs
// them (environ_user_mismatch quotes the user with %q). Through the handler
// jobscope builds, with colour (stderr a terminal) and without, and in JSON,
// none of it reaches the terminal as a control, C1 or bidi rune, and no text
// after a byte that is not UTF-8 is lost.
func TestLogEscapesHostileText(t *testing.T) {
	const user = "\x1b]0;pwned\a\x1b[2J\x1b[31mFAKE ALERT"
	mismatch := fmt.Errorf("SLURM_JOB_USER %q in a job process's environment is not the name of uid %d", user, 1001)
	for _, c := range []struct {
		format string
		color  bool
	}{{"text", true}, {"text", false}, {"json", false}} {
		var b bytes.Buffer
		l, err := buildLogger("info", c.format, &b, c.color)
		if err != nil {
			t.Fatal(err)
		}
		l.Warn("collector problem (logged once per cause)", "collector", "discovery", "cause", "environ_user_mismatch", "err", mismatch)
		l.Warn("raw", "name", "a\xffb hidden tail", "typed", `see \x1b[2J here`, "c1", "x\u009b2J \u202etxt.exe")
		l.With("job", user).WithGroup("g").Warn("msg \x1b[2J", "names", []string{user}, "e", errors.New(user))
		out := b.String()
		rest := handlerSGR.ReplaceAllString(out, "")
		name := fmt.Sprintf("%s colour=%v", c.format, c.color)
		if strings.ContainsAny(rest, "\x1b\a") || strings.Contains(out, "\x1b[31m") || strings.Contains(out, "\x1b[2J") {
			t.Errorf("%s: a raw ESC or BEL of the user's text reached the output:\n%q", name, out)
		}
		if !utf8.ValidString(out) || strings.ContainsFunc(out, func(r rune) bool { return r != '\n' && termsafe.Unsafe(r) && r != 0x1b }) {
			t.Errorf("%s: an unsafe rune or a byte that is not UTF-8 in the output:\n%q", name, out)
		}
		for _, want := range []string{"b hidden tail", "FAKE ALERT", "txt.exe", "␛[2J"} {
			if !strings.Contains(out, want) {
				t.Errorf("%s: %q lost:\n%q", name, want, out)
			}
		}
	}
}
