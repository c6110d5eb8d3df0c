// SPDX-License-Identifier: Apache-2.0

package report

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/jobscope/jobscope/internal/termsafe"
)

// Job names, users, accounts, executable paths and Slurm's error texts are
// written by the job's user (sbatch -J, argv) or come from commands that
// echo them, and admins read reports of other users' jobs on their own
// terminals. termSafe is the one filter every line of text and every CSV
// cell goes through on its way out.

// unsafeRune and termSafe are internal/termsafe's, which the logger
// shares: see there what each rune becomes.
func unsafeRune(r rune) bool { return termsafe.Unsafe(r) }

func termSafe(s string) string { return termsafe.String(s) }

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
