// SPDX-License-Identifier: Apache-2.0

package termsafe

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// TestStringAndLog: each input with what the terminal escaper (String) and
// the log escaper (Log) make of it, so every hostile input is tried on both.
func TestStringAndLog(t *testing.T) {
	for _, c := range []struct{ in, str, log string }{
		{"train", "train", "train"},
		{"héllo 中文 – ok", "héllo 中文 – ok", "héllo 中文 – ok"},
		{"a\x1b[2Jb", "a␛[2Jb", "a␛[2Jb"},
		{"\x1b]0;title\a", "␛]0;title␇", "␛]0;title␇"},
		{"tab\there\r\n", "tab␉here␍␊", "tab␉here␍␊"},
		{"two\nlines", "two␊lines", "two␊lines"},
		{"del\x7f", "del␡", "del␡"},
		{"c1\u009b2J", "c1\ufffd2J", "c1\\u009b2J"},
		{"abc\u202eexe.txt", "abc\ufffdexe.txt", "abc\\u202eexe.txt"},
		{"\u2066x\u2069\u200f", "\ufffdx\ufffd\ufffd", `\u2066x\u2069\u200f`},
		{"bad\xffbyte", "bad\ufffdbyte", "bad\\xffbyte"},
		// Without colour, tint drops what follows a U+FFFD or a bad byte.
		{"bad\xffbyte tail", "bad\ufffdbyte tail", "bad\\xffbyte tail"},
		{"real \ufffd stays", "real \ufffd stays", "real \\ufffd stays"},
		{"real \ufffd tail", "real \ufffd tail", "real \\ufffd tail"},
		// With colour, tint turns the text \x1b into a raw ESC.
		{`typed \x1b[2J`, `typed \x1b[2J`, `typed \x1B[2J`},
		{`typed \\x1b\x1b`, `typed \\x1b\x1b`, `typed \\x1B\x1B`},
		{"del\x7f \u2066x\a", "del␡ \ufffdx␇", "del␡ \\u2066x␇"},
	} {
		str := String(c.in)
		if str != c.str {
			t.Errorf("String(%q) = %q, want %q", c.in, str, c.str)
		}
		// One rune for one: columns padded before stay aligned.
		if utf8.RuneCountInString(str) != len([]rune(c.in)) {
			t.Errorf("String(%q) changed the width: %q", c.in, str)
		}
		log := Log(c.in)
		if log != c.log {
			t.Errorf("Log(%q) = %q, want %q", c.in, log, c.log)
		}
		if !utf8.ValidString(log) || strings.ContainsFunc(log, func(r rune) bool { return Unsafe(r) || r == utf8.RuneError }) {
			t.Errorf("Log(%q) = %q keeps an unsafe rune", c.in, log)
		}
	}
}
