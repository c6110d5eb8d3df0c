// SPDX-License-Identifier: Apache-2.0

// Package termsafe makes text that a job's user wrote (job names, users,
// accounts, paths, Slurm's echo of them) safe to print on a terminal.
package termsafe

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Unsafe reports whether r may move the cursor, change the terminal's
// state or disguise the text around it: C0 controls, DEL, C1 controls (a
// UTF-8 terminal may act on U+009B as on ESC [), and the bidirectional
// formatting characters (Trojan Source: U+202A-202E, U+2066-2069, and the
// marks U+200E, U+200F, U+061C).
func Unsafe(r rune) bool {
	switch {
	case r < 0x20, r >= 0x7f && r <= 0x9f:
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069, r == 0x200e, r == 0x200f, r == 0x061c:
		return true
	}
	return false
}

// String replaces each unsafe rune by one visible rune, so columns padded
// and text clipped before stay aligned: a C0 control by its Unicode
// control picture (ESC shows as ␛, BEL as ␇), DEL as ␡, anything else
// (C1, bidi formatting, bytes that are not UTF-8) as U+FFFD. What follows an
// ESC ("[2J") is then plain text.
func String(s string) string {
	if clean(s, false) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i, r := range s {
		switch {
		case r == utf8.RuneError && !validAt(s, i):
			b.WriteRune(utf8.RuneError)
		case r < 0x20 || r == 0x7f:
			b.WriteRune(picture(r))
		case Unsafe(r):
			b.WriteRune(utf8.RuneError)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// Log is String for log lines, where no column needs keeping and the text
// handler (tint) has two quirks of its own: with colour it turns every
// `\x1b` of a quoted value back into a raw ESC, a literal one a user typed
// included, and without colour it drops everything after the first U+FFFD
// or byte that is not UTF-8. So a C0 control becomes its control picture
// (never the text \x1b) and DEL ␡, as in String; C1 and bidi formatting
// runes become \uXXXX, a byte that is not UTF-8 \xNN and a real U+FFFD
// \ufffd, all plain ASCII; and the text `\x1b` is written `\x1B`.
func Log(s string) string {
	if clean(s, true) && !strings.Contains(s, `\x1b`) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for i, r := range s {
		switch {
		case r == utf8.RuneError && !validAt(s, i):
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r < 0x20 || r == 0x7f:
			b.WriteRune(picture(r))
		case Unsafe(r) || r == utf8.RuneError:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	return strings.ReplaceAll(b.String(), `\x1b`, `\x1B`)
}

// clean says whether s has nothing String (or, with fffd, Log) changes.
func clean(s string, fffd bool) bool {
	for i, r := range s {
		if Unsafe(r) || r == utf8.RuneError && (fffd || !validAt(s, i)) {
			return false
		}
	}
	return true
}

// picture is the Unicode control picture of a C0 control or DEL.
func picture(r rune) rune {
	if r == 0x7f {
		return 0x2421
	}
	return 0x2400 + r
}

// validAt tells a real U+FFFD in s from a byte that is not UTF-8, which
// range also reads as utf8.RuneError.
func validAt(s string, i int) bool {
	r, n := utf8.DecodeRuneInString(s[i:])
	return r != utf8.RuneError || n > 1
}
