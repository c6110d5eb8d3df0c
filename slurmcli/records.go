// SPDX-License-Identifier: Apache-2.0

package slurmcli

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"
)

// A job's user chooses its name freely (sbatch -J), newlines and '|'
// included, and squeue and sacct print it as it is. So the text forms that
// hold user text are asked for with a field separator made new for every
// run (NewSeparator), which no name submitted before the run can hold, and
// the user's field comes last: a line holding every separator starts a
// record, a line holding none goes on with the previous record's last field
// (a newline in the name), and any other line starts a record that is
// refused. One bad record is left out and counted (Refused), never the
// whole answer.

// NewSeparator returns a field separator for one run of a text command: 16
// random hex digits between two '|'. It starts with '|' because squeue -O
// reads a size right after "Field:" (strtol: digits, spaces and signs),
// and holds no '%' (squeue -o's field mark) nor ',' (-O's list separator).
func NewSeparator() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // never fails (it aborts the program instead)
	return "|" + hex.EncodeToString(b[:]) + "|"
}

// validSeparator tells a separator the parsers can rely on: long enough
// that no text can hold it by chance, and nothing a command line would
// read otherwise.
func validSeparator(sep string) bool {
	if len(sep) < 8 || len(sep) > 64 || sep[0] != '|' {
		return false
	}
	for i := 0; i < len(sep); i++ {
		if c := sep[i]; c <= ' ' || c >= 0x7f || c == '%' || c == ',' {
			return false
		}
	}
	return true
}

// maxRecordBytes bounds one record, its continued last field included:
// what a user's job name may cost the exporter's memory. A longer record
// is refused.
const maxRecordBytes = 64 << 10

// Refused is what a text parser left out of an answer it otherwise used:
// records it could not read and job ids that appeared more than once.
type Refused struct {
	Records int   // records left out
	First   error // why the first one was
}

func (r *Refused) add(err error) {
	if r.First == nil {
		r.First = err
	}
	r.Records++
}

// RefusedError is returned with the records a query could use when it left
// some out: the answer is good, less those records.
type RefusedError struct {
	Command string
	Refused
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("%s: %d record(s) left out, the first because: %v", e.Command, e.Records, e.First)
}

// Partial reports whether err only says that some records were left out
// (the records returned with it are good).
func Partial(err error) bool {
	var re *RefusedError
	return errors.As(err, &re)
}

// CauseRecord counts records left out of an otherwise good answer.
const CauseRecord = "record"

// splitRecords reads r as records of n fields joined by sep, the last one
// free text that may go on over several lines, and calls each with every
// well-formed record (line is where it starts; f is reused after each
// returns, its strings are not). A record that is malformed,
// too long, or that each refuses is counted in the returned Refused. The
// error is reading's own, or says that no line had every separator (the
// output is not this form at all).
func splitRecords(r io.Reader, sep string, n int, each func(line int, f []string) error) (Refused, error) {
	var ref Refused
	if !validSeparator(sep) {
		return ref, fmt.Errorf("field separator %q", sep)
	}
	br := bufio.NewReaderSize(r, 64<<10)
	fields := make([]string, 0, n) // cur's storage, reused: each must not keep f
	var (
		cur     []string // the record being read; nil before the first
		curLine int
		curErr  error  // why cur is refused
		more    []byte // lines that go on with cur's last field
		size    int
		started bool
		// starts counts lines with every separator, long ones too (the
		// user's field comes after them all).
		starts int
	)
	flush := func() {
		if !started {
			return
		}
		if curErr == nil {
			if len(more) > 0 {
				cur[n-1] += string(more)
			}
			curErr = each(curLine, cur)
		}
		if curErr != nil {
			ref.add(fmt.Errorf("line %d: %w", curLine, curErr))
		}
		started, cur, curErr, more = false, nil, nil, more[:0]
	}
	for line := 1; ; line++ {
		text, long, err := readLine(br, maxRecordBytes)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return ref, err
		}
		k := strings.Count(text, sep)
		if k == n-1 {
			starts++
		}
		switch {
		case k == n-1 && !long:
			flush()
			started, curLine, size = true, line, len(text)
			cur = splitInto(fields[:0], text, sep)
		case k == 0 && started:
			// A newline in the last field: it goes on.
			size += 1 + len(text)
			switch {
			case long || size > maxRecordBytes:
				if curErr == nil {
					curErr = fmt.Errorf("record over %d bytes", maxRecordBytes)
				}
			case curErr == nil:
				// Gathered apart: adding to the string each time would
				// copy it again for every line of a many-line name.
				more = append(append(more, '\n'), text...)
			}
		case k == 0 && strings.TrimSpace(text) == "":
			// A blank line outside any record.
		default:
			// A line that neither starts nor continues a record (only a
			// text that holds the separator can make one): a record of
			// its own, refused, with the lines that continue it.
			flush()
			started, curLine = true, line
			curErr = fmt.Errorf("%d fields, want %d", k+1, n)
			if long {
				curErr = fmt.Errorf("line over %d bytes", maxRecordBytes)
			}
		}
	}
	flush()
	if starts == 0 && ref.Records > 0 {
		// No line has the fields asked for: not this form at all (another
		// program, a changed format), which no user text can cause.
		return ref, fmt.Errorf("no line has the %d fields asked for: %w", n, ref.First)
	}
	return ref, nil
}

// readLine returns the next line without its newline. A line longer than
// limit is cut there and the rest skipped (long is true); io.EOF comes only
// when nothing is left.
func readLine(br *bufio.Reader, limit int) (text string, long bool, err error) {
	var b []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if err == nil && b == nil && !long && len(chunk) <= limit+1 {
			// The common case: the whole line in one piece, one copy.
			return string(chunk[:len(chunk)-1]), false, nil
		}
		if !long && len(b)+len(chunk) <= limit+1 {
			b = append(b, chunk...)
		} else {
			long = true
		}
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && len(b) == 0 && !long:
			return "", false, io.EOF
		case err != nil && !errors.Is(err, io.EOF):
			return "", false, err
		}
		s := strings.TrimSuffix(string(b), "\n")
		if len(s) > limit {
			s, long = s[:limit], true
		}
		return s, long, nil
	}
}

// splitInto appends the parts of s around every sep to dst.
func splitInto(dst []string, s, sep string) []string {
	for {
		i := strings.Index(s, sep)
		if i < 0 {
			return append(dst, s)
		}
		dst, s = append(dst, s[:i]), s[i+len(sep):]
	}
}

// dropDuplicates removes every record whose key appears more than once and
// counts each in ref. Slurm prints a job once: a second record of the same
// job can only be forged, and which one is Slurm's cannot be told, so
// neither is believed (the job then has no metadata from this answer,
// rather than perhaps someone else's).
func dropDuplicates[T any](recs []T, key func(T) string, ref *Refused) []T {
	seen := make(map[string]int, len(recs))
	for _, r := range recs {
		seen[key(r)]++
	}
	out := recs[:0]
	for _, r := range recs {
		if k := key(r); seen[k] > 1 {
			ref.add(fmt.Errorf("job %q printed %d times", k, seen[k]))
			continue
		}
		out = append(out, r)
	}
	return out
}
