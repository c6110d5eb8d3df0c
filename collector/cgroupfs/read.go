// Package cgroupfs reads and parses cgroup v1 and v2 interface files.
// Parsers are pure functions over bytes so they can be fuzzed; Reader
// reuses one buffer so a scrape of hundreds of jobs allocates little.
package cgroupfs

import (
	"errors"
	"io"
	"os"
	"syscall"
)

// ErrTooLarge is returned for a file larger than the reader's limit.
var ErrTooLarge = errors.New("cgroup file larger than expected")

// maxFile bounds one interface file (memory.stat of a v2 cgroup is ~1.5 KiB,
// io.stat grows with devices; 256 KiB is far beyond any real file).
const maxFile = 256 << 10

// Reader reads small interface files into a reused buffer.
// It is not safe for concurrent use: give each worker its own.
type Reader struct {
	buf []byte
	// open is os.Open; tests replace it to fake errors root cannot get
	// (permission denied).
	open func(string) (*os.File, error)
}

// NewReader returns a Reader with a small initial buffer.
func NewReader() *Reader { return &Reader{buf: make([]byte, 8<<10), open: os.Open} }

// NewReaderWithOpen is NewReader with a replacement for os.Open (tests).
func NewReaderWithOpen(open func(string) (*os.File, error)) *Reader {
	r := NewReader()
	r.open = open
	return r
}

// Read returns the content of path. The slice is valid until the next Read.
func (r *Reader) Read(path string) ([]byte, error) {
	f, err := r.open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	n := 0
	for {
		if n == len(r.buf) {
			if len(r.buf) >= maxFile {
				return nil, ErrTooLarge
			}
			nb := make([]byte, 2*len(r.buf))
			copy(nb, r.buf[:n])
			r.buf = nb
		}
		m, err := f.Read(r.buf[n:])
		n += m
		if err == io.EOF || (err == nil && m == 0) {
			return r.buf[:n], nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// Gone reports whether err means the file or its cgroup no longer exists
// (a job ending mid-scrape), which is normal and silent.
func Gone(err error) bool {
	return errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ENODEV) || errors.Is(err, syscall.ESRCH)
}
