// SPDX-License-Identifier: Apache-2.0

package slurmcli

import (
	"bytes"
	"errors"
	"fmt"
	"io"
)

// jsonScanner walks JSON read from a stream, value by value, without
// holding more than its read window and the one value a caller keeps:
// squeue --json of a large queue is hundreds of MiB, and encoding/json's
// Decoder buffers each whole top-level value (and is 5 to 10 times slower
// at skipping the many fields jobscope does not read). It checks the
// syntax of what it walks (brackets, strings, numbers, literals); what it
// keeps is decoded by the callers, with encoding/json for any form they do
// not read themselves, so values agree with a full decode.
type jsonScanner struct {
	r     io.Reader
	buf   []byte
	pos   int
	err   error // the reader's error, once it returned one
	out   []byte
	stack []byte
}

// jsonMaxDepth bounds nesting as encoding/json does: hostile output cannot
// grow the bracket stack without end.
const jsonMaxDepth = 10000

// maxScalar bounds a number or literal: Slurm's are a few bytes long, and
// a stream of digits must not grow memory.
const maxScalar = 1 << 10

func newJSONScanner(r io.Reader) *jsonScanner {
	return &jsonScanner{r: r, buf: make([]byte, 0, 64<<10)}
}

// fill makes sure a byte is buffered; false at the end of the input.
func (s *jsonScanner) fill() bool {
	for s.pos >= len(s.buf) {
		if s.err != nil {
			return false
		}
		var n int
		n, s.err = s.r.Read(s.buf[:cap(s.buf)])
		s.buf, s.pos = s.buf[:n], 0
	}
	return true
}

// eof is the error for input that ended inside a value.
func (s *jsonScanner) eof() error {
	if s.err != nil && !errors.Is(s.err, io.EOF) {
		return s.err
	}
	return io.ErrUnexpectedEOF
}

// peek skips white space and returns the next byte, unread. The usual
// case, a token right there, is inlined at the callers.
func (s *jsonScanner) peek() (byte, error) {
	if s.pos < len(s.buf) {
		if c := s.buf[s.pos]; c > ' ' {
			return c, nil
		}
	}
	return s.peekSpace()
}

// peekSpace is peek past white space, in a local loop over the window:
// Slurm indents its JSON, so half its bytes are white space, and a call
// per byte was a quarter of a poll.
func (s *jsonScanner) peekSpace() (byte, error) {
	for s.fill() {
		b, i := s.buf, s.pos
		for i < len(b) && isSpace(b[i]) {
			i++
		}
		s.pos = i
		if i < len(b) {
			return b[i], nil
		}
	}
	return 0, s.eof()
}

func isSpace(c byte) bool {
	return c <= ' ' && (c == ' ' || c == '\n' || c == '\t' || c == '\r')
}

// endsScalar: the bytes that end a number or literal (what may follow one
// in JSON, and a quote or colon, which may not but end it all the same).
func endsScalar(c byte) bool {
	switch c {
	case ',', '}', ']', ' ', '\t', '\n', '\r', '"', ':':
		return true
	}
	return false
}

// expect reads the next byte, which must be c.
func (s *jsonScanner) expect(c byte) error {
	got, err := s.peek()
	if err != nil {
		return err
	}
	if got != c {
		return fmt.Errorf("json: invalid character %q, want %q", got, c)
	}
	s.pos++
	return nil
}

// more reads the separator after an element of an object or array: true
// if another element follows (','), false at the closing byte end.
func (s *jsonScanner) more(end byte) (bool, error) {
	c, err := s.peek()
	if err != nil {
		return false, err
	}
	s.pos++
	switch c {
	case ',':
		return true, nil
	case end:
		return false, nil
	}
	return false, fmt.Errorf("json: invalid character %q after an element", c)
}

// first reads past the opening byte of an object or array (already
// peeked) and says whether it holds an element.
func (s *jsonScanner) first(end byte) (bool, error) {
	s.pos++
	c, err := s.peek()
	if err != nil {
		return false, err
	}
	if c == end {
		s.pos++
		return false, nil
	}
	return true, nil
}

// key reads an object key and its colon; the raw key (between the quotes,
// escapes left as they are) is valid until the scanner's next call.
func (s *jsonScanner) key() ([]byte, error) {
	c, err := s.peek()
	if err != nil {
		return nil, err
	}
	if c != '"' {
		return nil, fmt.Errorf("json: invalid character %q, want an object key", c)
	}
	// Most keys lie whole in the window, without escapes, their colon
	// next: no copy. (The colon must be in the window too: reading past
	// it would refill the window under the key.)
	b := s.buf[s.pos+1:]
	if q := bytes.IndexByte(b, '"'); q >= 0 && q+1 < len(b) && b[q+1] == ':' && bytes.IndexByte(b[:q], '\\') < 0 {
		s.pos += q + 3
		return b[:q], nil
	}
	s.out = s.out[:0]
	if err := s.str(true); err != nil {
		return nil, err
	}
	k := s.out[1 : len(s.out)-1]
	return k, s.expect(':')
}

// What value expects next, inside the value it reads.
const (
	wantValue        = iota // after ':' or an array's ','
	wantValueOrClose        // after '['
	wantKey                 // after an object's ','
	wantKeyOrClose          // after '{'
	wantColon               // after a key
	wantCommaOrClose        // after an element
)

// value reads one value, keeping its bytes (white space outside strings
// dropped) if keep; they are valid until the scanner's next call (a
// string or number that lies whole in the window is returned in place,
// not copied). The grammar of objects and arrays is checked as in a full
// decode: a skipped value that is not JSON fails here, rather than making
// the rest of the output read as something else.
//
// It works on the window with local indices, refilling only at its end:
// skipping the ~80 fields of a job that jobscope does not read is most of
// what a poll costs, and a method call per byte (peek, punct) was most of
// that.
func (s *jsonScanner) value(keep bool) ([]byte, error) {
	s.out, s.stack = s.out[:0], s.stack[:0]
	want := wantValue
	b, i := s.buf, s.pos
	for {
		for i < len(b) && isSpace(b[i]) {
			i++
		}
		if i == len(b) {
			s.pos = i
			if !s.fill() {
				return nil, s.eof()
			}
			b, i = s.buf, s.pos
			continue
		}
		c := b[i]
		isValue := want == wantValue || want == wantValueOrClose
		done := false // a value ended
		switch {
		case c == '"' && (isValue || want == wantKey || want == wantKeyOrClose):
			if isValue {
				done = true
			} else {
				want = wantColon
			}
			q := closingQuote(b, i+1)
			switch {
			case q < 0: // it goes on past the window
				s.pos = i
				if err := s.str(keep); err != nil {
					return nil, err
				}
				b, i = s.buf, s.pos
			case done && len(s.stack) == 0: // the whole value, in place
				s.pos = q + 1
				return b[i : q+1], nil
			default:
				if keep {
					s.out = append(s.out, b[i:q+1]...)
				}
				i = q + 1
			}
		case isValue && c != '{' && c != '[' && c != '}' && c != ']' && c != ',' && c != ':':
			j := i
			for j < len(b) && !endsScalar(b[j]) {
				j++
			}
			if j == len(b) { // it may go on past the window, or end the input
				s.pos = i
				if err := s.scalar(keep); err != nil {
					return nil, err
				}
				b, i, done = s.buf, s.pos, true
				break
			}
			if !validScalar(b[i:j]) {
				return nil, fmt.Errorf("json: invalid literal %q", truncate(b[i:j]))
			}
			if len(s.stack) == 0 { // the whole value, in place
				s.pos = j
				return b[i:j], nil
			}
			if keep {
				s.out = append(s.out, b[i:j]...)
			}
			i, done = j, true
		default: // punctuation: one byte
			switch {
			case (c == '{' || c == '[') && isValue:
				if len(s.stack) >= jsonMaxDepth {
					return nil, errors.New("json: exceeded max depth")
				}
				s.stack = append(s.stack, c+2) // '{'+2 is '}', '['+2 is ']'
				want = wantValueOrClose
				if c == '{' {
					want = wantKeyOrClose
				}
			case (c == '}' && (want == wantKeyOrClose || want == wantCommaOrClose) ||
				c == ']' && (want == wantValueOrClose || want == wantCommaOrClose)) &&
				len(s.stack) > 0 && s.stack[len(s.stack)-1] == c:
				s.stack = s.stack[:len(s.stack)-1]
				done = true
			case c == ':' && want == wantColon:
				want = wantValue
			case c == ',' && want == wantCommaOrClose:
				want = wantValue
				if s.stack[len(s.stack)-1] == '}' {
					want = wantKey
				}
			default:
				return nil, fmt.Errorf("json: invalid character %q", c)
			}
			if keep {
				s.out = append(s.out, c)
			}
			i++
		}
		if done {
			if len(s.stack) == 0 {
				s.pos = i
				return s.out, nil
			}
			want = wantCommaOrClose
		}
	}
}

// closingQuote returns the index in b of the quote that ends the string
// whose first byte is at b[i] (-1 if the window ends first): the first
// quote after an even run of backslashes, each pair an escaped backslash.
func closingQuote(b []byte, i int) int {
	for {
		q := bytes.IndexByte(b[i:], '"')
		if q < 0 {
			return -1
		}
		q += i
		n := 0
		for k := q - 1; k >= i && b[k] == '\\'; k-- {
			n++
		}
		if n%2 == 0 {
			return q
		}
		i = q + 1
	}
}

// str reads a string, its quotes included; only its end is looked for
// here, with bytes.IndexByte over the window (strings are most of Slurm's
// output). The callers decode what they keep: escapes, UTF-8 and control
// characters are checked there (plainString, encoding/json), not in the
// strings skipped.
func (s *jsonScanner) str(keep bool) error {
	s.pos++ // the opening quote
	if keep {
		s.out = append(s.out, '"')
	}
	esc := false
	for s.fill() {
		b := s.buf[s.pos:]
		if esc { // the byte after a backslash, read past a window's end
			esc = false
			s.pos++
			if keep {
				s.out = append(s.out, b[0])
			}
			continue
		}
		q := bytes.IndexByte(b, '"')
		seg := b
		if q >= 0 {
			seg = b[:q]
		}
		if e := bytes.IndexByte(seg, '\\'); e >= 0 {
			// Up to the backslash and the byte it escapes, then look again.
			n := min(e+2, len(b))
			esc = n == e+1
			if keep {
				s.out = append(s.out, b[:n]...)
			}
			s.pos += n
			continue
		}
		if q >= 0 {
			if keep {
				s.out = append(s.out, b[:q+1]...)
			}
			s.pos += q + 1
			return nil
		}
		if keep {
			s.out = append(s.out, b...)
		}
		s.pos += len(b)
	}
	return s.eof()
}

// scalar reads a number, true, false or null, and checks it.
func (s *jsonScanner) scalar(keep bool) error {
	if !keep {
		// Most lie whole in the window: checked in place.
		b := s.buf[s.pos:]
		for i, c := range b {
			if c == ',' || c == '}' || c == ']' || c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '"' || c == ':' {
				if !validScalar(b[:i]) {
					return fmt.Errorf("json: invalid literal %q", truncate(b[:i]))
				}
				s.pos += i
				return nil
			}
		}
	}
	start := len(s.out)
	for s.fill() {
		c := s.buf[s.pos]
		if c == ',' || c == '}' || c == ']' || c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '"' || c == ':' {
			break
		}
		if len(s.out)-start >= maxScalar {
			return errors.New("json: literal too long")
		}
		s.out = append(s.out, c)
		s.pos++
	}
	tok := s.out[start:]
	if len(tok) == 0 {
		return s.eof()
	}
	if !validScalar(tok) {
		return fmt.Errorf("json: invalid literal %q", truncate(tok))
	}
	if !keep {
		s.out = s.out[:start]
	}
	return nil
}

// validScalar: a JSON number, true, false or null.
func validScalar(b []byte) bool {
	switch string(b) {
	case "true", "false", "null":
		return true
	}
	return isJSONNumber(b)
}

// truncate shortens what an error quotes of hostile input.
func truncate(b []byte) []byte {
	if len(b) > 32 {
		return b[:32]
	}
	return b
}

// isJSONNumber checks JSON's number grammar: strconv.ParseFloat alone
// would also take "Inf", "0x1p4" or "+1".
func isJSONNumber(b []byte) bool {
	i := 0
	if i < len(b) && b[i] == '-' {
		i++
	}
	digits := func() int {
		n := 0
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
			n++
		}
		return n
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case digits() == 0:
		return false
	}
	if i < len(b) && b[i] == '.' {
		i++
		if digits() == 0 {
			return false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	return i == len(b)
}
