// SPDX-License-Identifier: Apache-2.0

package termsafe

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestString(t *testing.T) {
	for in, want := range map[string]string{
		"train":               "train",
		"héllo 中文 – ok":       "héllo 中文 – ok",
		"a\x1b[2Jb":           "a␛[2Jb",
		"\x1b]0;title\a":      "␛]0;title␇",
		"tab\there\r\n":       "tab␉here␍␊",
		"del\x7f":             "del␡",
		"c1\u009b2J":          "c1\ufffd2J",
		"abc\u202eexe.txt":    "abc\ufffdexe.txt",
		"\u2066x\u2069\u200f": "\ufffdx\ufffd\ufffd",
		"bad\xffbyte":         "bad\ufffdbyte",
		"real \ufffd stays":   "real \ufffd stays",
	} {
		got := String(in)
		if got != want {
			t.Errorf("String(%q) = %q, want %q", in, got, want)
		}
		// One rune for one: columns padded before stay aligned.
		if utf8.RuneCountInString(got) != len([]rune(in)) {
			t.Errorf("String(%q) changed the width: %q", in, got)
		}
	}
}

func TestLog(t *testing.T) {
	for in, want := range map[string]string{
		"train":             "train",
		"héllo 中文 – ok":     "héllo 中文 – ok",
		"a\x1b[2Jb":         "a␛[2Jb",
		"\x1b]0;title\a":    "␛]0;title␇",
		"two\nlines":        "two␊lines",
		"c1\u009b2J":        "c1\\u009b2J",
		"abc\u202eexe.txt":  "abc\\u202eexe.txt",
		"bad\xffbyte tail":  "bad\\xffbyte tail",
		"real \ufffd tail":  "real \\ufffd tail",
		`typed \x1b[2J`:     `typed \x1B[2J`,
		`typed \\x1b\x1b`:   `typed \\x1B\x1B`,
		"del\x7f \u2066x\a": "del␡ \\u2066x␇",
	} {
		got := Log(in)
		if got != want {
			t.Errorf("Log(%q) = %q, want %q", in, got, want)
		}
		if !utf8.ValidString(got) || strings.ContainsFunc(got, func(r rune) bool { return Unsafe(r) || r == utf8.RuneError }) {
			t.Errorf("Log(%q) = %q keeps an unsafe rune", in, got)
		}
	}
}
