// SPDX-License-Identifier: Apache-2.0

package slurmcli

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"unicode/utf8"
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
		b := s.buf
		i := skipSpace(b, s.pos)
		s.pos = i
		if i < len(b) {
			return b[i], nil
		}
	}
	return 0, s.eof()
}

// ones has a 1 in each byte, tops the top bit of each: for the tests on
// 8 bytes at once below.
const (
	ones = 0x0101010101010101
	tops = 0x8080808080808080
)

// zeroBytes has the top bit set of the first zero byte of x (lowest
// address, little-endian), and maybe of later ones: a borrow can set a
// byte's bit above a zero byte, never below one.
func zeroBytes(x uint64) uint64 {
	return (x - ones) &^ x & tops
}

// ctlBytes has the top bit set of the first byte of x below 0x20 (a
// control character, which JSON does not allow raw in a string), and
// maybe of later ones, as zeroBytes.
func ctlBytes(x uint64) uint64 {
	return (x - ones*0x20) &^ x & tops
}

// hasCtl says whether b holds a control character.
func hasCtl(b []byte) bool {
	i := 0
	for ; i+8 <= len(b); i += 8 {
		if ctlBytes(binary.LittleEndian.Uint64(b[i:])) != 0 {
			return true
		}
	}
	for ; i < len(b); i++ {
		if b[i] < 0x20 {
			return true
		}
	}
	return false
}

// errCtlInString is a raw control character in a string: not JSON (a
// full decode refuses it too).
var errCtlInString = errors.New("json: invalid control character in string")

// upperOrHigh has the top bit set of each byte of x from 'A' to '\\' (the
// upper-case letters, '[' and the backslash) or non-ASCII: the bytes that
// make a key other than its folded form. Exact in each byte: no sum or
// difference below carries into the next.
func upperOrHigh(x uint64) uint64 {
	y := x &^ tops
	between := (ones*(127+'\\'+1) - y) & (y + ones*(127-('A'-1))) // 'A'-1 < y < '\\'+1
	return (between | x) & tops
}

// skipSpace returns the index of the first byte from b[i] on that is not
// white space (len(b) if none); a run of spaces, as Slurm indents, is
// passed 8 bytes at a time.
func skipSpace(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ':
			if i+8 > len(b) {
				i++
			} else if x := binary.LittleEndian.Uint64(b[i:]) ^ ones*' '; x != 0 {
				i += bits.TrailingZeros64(x) / 8
			} else {
				i += 8
			}
		case '\n', '\t', '\r':
			i++
		default:
			return i
		}
	}
	return i
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
// escapes left as they are) is valid until the scanner's next call. lower
// says that it has no upper-case letter, escape or non-ASCII byte, so that
// it is its own folded form (as all of Slurm's keys are).
func (s *jsonScanner) key() (k []byte, lower bool, err error) {
	c, err := s.peek()
	if err != nil {
		return nil, false, err
	}
	if c != '"' {
		return nil, false, fmt.Errorf("json: invalid character %q, want an object key", c)
	}
	// Most keys lie whole in the window, without escapes, their colon
	// next: no copy, and one pass over their few bytes (a loop here is
	// quicker than IndexByte's call for keys this short). The colon must
	// be in the window too: reading past it would refill the window under
	// the key.
	b, i := s.buf, s.pos+1
	lower = true
	j := i
	for ; j+8 <= len(b); j += 8 { // 8 bytes at a time
		x := binary.LittleEndian.Uint64(b[j:])
		odd := upperOrHigh(x)
		if end := zeroBytes(x^(ones*'"')) | zeroBytes(x^(ones*'\\')) | ctlBytes(x); end != 0 {
			n := bits.TrailingZeros64(end) // the top bit of the first
			lower = lower && odd&(1<<n-1) == 0
			j += n / 8
			break
		}
		lower = lower && odd == 0
	}
	for ; j < len(b); j++ {
		c := b[j]
		if c == '"' {
			if j+1 < len(b) && b[j+1] == ':' {
				s.pos = j + 2
				return b[i:j], lower, nil
			}
			break
		}
		if c == '\\' || c < 0x20 { // str reads (or refuses) it
			break
		}
		if c-'A' <= '\\'-'A' || c >= utf8.RuneSelf {
			lower = false
		}
	}
	s.out = s.out[:0]
	if err := s.str(true); err != nil {
		return nil, false, err
	}
	// A key with an escape (or not whole in the window) is rare: its
	// escapes are checked here, as a full decode does.
	if !json.Valid(s.out) {
		return nil, false, fmt.Errorf("json: invalid object key %q", truncate(s.out))
	}
	k = s.out[1 : len(s.out)-1]
	return k, false, s.expect(':')
}

// keyIs reads the next key and its colon if the key is exactly k, which
// holds no quote or backslash, and says whether it did; if not, it reads
// nothing but white space.
func (s *jsonScanner) keyIs(k []byte) bool {
	b, i := s.buf, s.pos
	if i < len(b) && isSpace(b[i]) {
		i = skipSpace(b, i)
		s.pos = i
	}
	n := i + 1 + len(k) // the closing quote
	if n+1 < len(b) && b[i] == '"' && b[n] == '"' && b[n+1] == ':' && string(b[i+1:n]) == string(k) {
		s.pos = n + 2
		return true
	}
	return false
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
	// Most values are a string, a number of digits or a literal, whole in
	// the window after at most a space: read in place, without the loop.
	b, i := s.buf, s.pos
	if i < len(b) && b[i] == ' ' {
		i++
	}
	if i < len(b) {
		switch c := b[i]; {
		case c == '"':
			if q := closingQuote(b, i+1); q >= 0 {
				s.pos = q + 1
				return b[i : q+1], nil
			}
		case c == '-' || c-'0' <= 9 || c == 't' || c == 'f' || c == 'n':
			if n := plainScalar(b[i:]); n > 0 {
				s.pos = i + n
				return b[i : i+n], nil
			}
		}
	}
	return s.walk(keep)
}

// plainScalar is the length of the integer (digits, maybe a minus) or
// literal that b starts with, if a byte that ends it follows in b; 0 for
// anything else, which walk reads.
func plainScalar(b []byte) int {
	j := 0
	if len(b) > 0 && b[0] == '-' {
		j = 1
	}
	n := j
	for n < len(b) && b[n]-'0' <= 9 {
		n++
	}
	switch {
	case n > j:
		if b[j] == '0' && n > j+1 { // a leading zero: not JSON
			return 0
		}
	case len(b) > 4 && (string(b[:4]) == "true" || string(b[:4]) == "null"):
		n = 4
	case len(b) > 5 && string(b[:5]) == "false":
		n = 5
	default:
		return 0
	}
	if n < len(b) && endsScalar(b[n]) {
		return n
	}
	return 0
}

// walk is value's loop, for any value.
func (s *jsonScanner) walk(keep bool) ([]byte, error) {
	s.out, s.stack = s.out[:0], s.stack[:0]
	want := wantValue
	b, i := s.buf, s.pos
	for {
		if i < len(b) && isSpace(b[i]) {
			i = skipSpace(b, i)
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
			case q == ctlQuote:
				return nil, errCtlInString
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
// whose first byte is at b[i] (-1 if the window ends first, ctlQuote if a
// control character comes first): the first quote after an even run of
// backslashes, each pair an escaped backslash.
func closingQuote(b []byte, i int) int {
	// Most strings are short: 8 bytes at a time for a quote or backslash
	// (IndexByte's call costs more than their length), an escape passed
	// whole.
	for end := min(i+64, len(b)); i+8 <= end; {
		x := binary.LittleEndian.Uint64(b[i:])
		m := zeroBytes(x^(ones*'"')) | zeroBytes(x^(ones*'\\')) | ctlBytes(x)
		if m == 0 {
			i += 8
			continue
		}
		i += bits.TrailingZeros64(m) / 8
		switch {
		case b[i] == '"':
			return i
		case b[i] < 0x20:
			return ctlQuote
		}
		i += 2
	}
	if i > len(b) { // the byte a backslash escapes is past the window
		return -1
	}
	// The rest with IndexByte; b[i-1] is not a backslash that escapes.
	for {
		q := bytes.IndexByte(b[i:], '"')
		if q < 0 {
			return -1
		}
		if hasCtl(b[i : i+q]) {
			return ctlQuote
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

// ctlQuote is closingQuote's answer for a string with a control character.
const ctlQuote = -2

// str reads a string, its quotes included; only its end is looked for
// here, with bytes.IndexByte over the window (strings are most of Slurm's
// output), and raw control characters are refused, in every string (a
// full decode refuses them too). The callers decode what they keep:
// escapes and UTF-8 are checked there (plainString, encoding/json), not in
// the strings skipped.
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
			if hasCtl(seg[:e]) {
				return errCtlInString
			}
			// Up to the backslash and the byte it escapes, then look again.
			n := min(e+2, len(b))
			esc = n == e+1
			if keep {
				s.out = append(s.out, b[:n]...)
			}
			s.pos += n
			continue
		}
		if hasCtl(seg) {
			return errCtlInString
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
