package report

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// Job names, users, accounts, executable paths and Slurm's error texts are
// written by the job's user (sbatch -J, argv) or come from commands that
// echo them, and admins read reports of other users' jobs on their own
// terminals. termSafe is the one filter every line of text and every CSV
// cell goes through on its way out.

// unsafeRune reports whether r may move the cursor, change the terminal's
// state or disguise the text around it: C0 controls, DEL, C1 controls (a
// UTF-8 terminal may act on U+009B as on ESC [), and the bidirectional
// formatting characters (Trojan Source: U+202A-202E, U+2066-2069, and the
// marks U+200E, U+200F, U+061C).
func unsafeRune(r rune) bool {
	switch {
	case r < 0x20, r >= 0x7f && r <= 0x9f:
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069, r == 0x200e, r == 0x200f, r == 0x061c:
		return true
	}
	return false
}

// termSafe replaces each unsafe rune by one visible rune, so columns padded
// and text clipped before stay aligned: a C0 control by its Unicode
// control picture (ESC shows as ␛, BEL as ␇), DEL as ␡, anything else
// (C1, bidi formatting, bytes that are not UTF-8) as U+FFFD. What follows an
// ESC ("[2J") is then plain text.
func termSafe(s string) string {
	clean := true
	for i, r := range s {
		if unsafeRune(r) || r == utf8.RuneError && !validAt(s, i) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i, r := range s {
		switch {
		case r == utf8.RuneError && !validAt(s, i):
			b.WriteRune(utf8.RuneError)
		case r < 0x20:
			b.WriteRune(0x2400 + r)
		case r == 0x7f:
			b.WriteRune(0x2421)
		case unsafeRune(r):
			b.WriteRune(utf8.RuneError)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// validAt tells a real U+FFFD in s from a byte that is not UTF-8, which
// range also reads as utf8.RuneError.
func validAt(s string, i int) bool {
	r, n := utf8.DecodeRuneInString(s[i:])
	return r != utf8.RuneError || n > 1
}

// csvSafe is a CSV cell of text a user wrote: terminal-safe (the file is
// often read with cat or less) and never taken for a formula by a
// spreadsheet (a leading = + - @ tab or CR starts one, and a formula can
// run commands or send the sheet away): such a cell gets a leading '.
func csvSafe(s string) string {
	if s != "" && strings.ContainsRune("=+-@\t\r", rune(s[0])) {
		s = "'" + s
	}
	return termSafe(s)
}

// lineSafeWriter passes text through termSafe line by line, keeping the
// newlines: for stderr, where errors quote job names, Slurm's answers and
// URLs. Each Write is filtered whole; a caller writes whole messages.
type lineSafeWriter struct{ w io.Writer }

func (s lineSafeWriter) Write(p []byte) (int, error) {
	lines := bytes.Split(p, []byte("\n"))
	for i, l := range lines {
		lines[i] = []byte(termSafe(string(l)))
	}
	if _, err := s.w.Write(bytes.Join(lines, []byte("\n"))); err != nil {
		return 0, err
	}
	return len(p), nil
}

// jsonSafe escapes in JSON text what encoding/json leaves raw but a
// terminal may act on (DEL, C1 controls, bidi formatting): these runes
// only occur inside JSON strings, where \uXXXX is the same value.
func jsonSafe(b []byte) []byte {
	// Below DEL, encoding/json has escaped every control inside strings;
	// the ones left are the indentation's newlines.
	raw := func(r rune) bool { return r >= 0x7f && unsafeRune(r) }
	if !bytes.ContainsFunc(b, raw) {
		return b
	}
	var out bytes.Buffer
	out.Grow(len(b) + 16)
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		if raw(r) {
			fmt.Fprintf(&out, `\u%04x`, r)
		} else {
			out.Write(b[:n])
		}
		b = b[n:]
	}
	return out.Bytes()
}
