// SPDX-License-Identifier: Apache-2.0

package notify

import (
	"strings"
	"unicode/utf8"
)

// textSafe makes a string a job's user wrote (job name, annotation texts
// that quote it) harmless in a plain-text mail read in a terminal mail
// client and in a log line: C0 and C1 controls, DEL, the bidirectional
// overrides and invalid UTF-8 become U+FFFD, so no escape sequence, line
// break or reordered text survives.
func textSafe(s string) string {
	ok := utf8.ValidString(s)
	if ok {
		for _, r := range s {
			if unsafeRune(r) {
				ok = false
				break
			}
		}
	}
	if ok {
		return s
	}
	var b strings.Builder
	for _, r := range s { // invalid bytes come as utf8.RuneError
		if unsafeRune(r) {
			r = utf8.RuneError
		}
		b.WriteRune(r)
	}
	return b.String()
}

func unsafeRune(r rune) bool {
	switch {
	case r < 0x20, r >= 0x7f && r <= 0x9f:
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069, r == 0x200e, r == 0x200f, r == 0x061c:
		return true
	}
	return false
}

// clip bounds a user-written string kept in state and mails.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
