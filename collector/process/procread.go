package process

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"
)

// The per-process files of the default scrape, read with raw syscalls into
// a pooled buffer: an os.File costs two more syscalls per file (non-blocking
// mode, poller registration) and the procfs library's parsers go through
// fmt; a scrape of 3,000 processes reads 6,000 such files. Profiled on
// 128 jobs of 6 processes, the library path spent a third of the process
// collector's time outside the kernel's own work.

var procBufs = sync.Pool{New: func() any { b := make([]byte, 4096); return &b }}

var errProcTooLarge = errors.New("larger than 4 KiB")

// readRaw reads root/<pid>/<name> with one open, one read and one close: a
// proc file fills a read whole, so a read that leaves the buffer room to
// spare was the last.
func (r *procReader) readRaw(pid int, name string, buf []byte) ([]byte, error) {
	path := r.root + "/" + strconv.Itoa(pid) + "/" + name
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd)
	n := 0
	for {
		m, err := unix.Read(fd, buf[n:])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, &os.PathError{Op: "read", Path: path, Err: err}
		}
		n += m
		switch {
		case m == 0 || n < len(buf):
			return buf[:n], nil
		case n == len(buf):
			return nil, &os.PathError{Op: "read", Path: path, Err: errProcTooLarge}
		}
	}
}

// rawStat is what the collector uses of /proc/<pid>/stat.
type rawStat struct {
	state               string
	ppid                int
	flags, utime, stime uint64
	numThreads          int
	starttime           uint64
}

// parseStat reads the fields after the command name, which may itself hold
// spaces and parentheses: they start after the last ')'.
func parseStat(b []byte) (rawStat, error) {
	var st rawStat
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 > len(b) {
		return st, errors.New("stat: no command name")
	}
	// Only the first 20 fields are read: a fixed array keeps this, run for
	// every process of every job each scrape, free of the slice of all
	// 50-odd fields bytes.Fields would allocate.
	var fa [20][]byte
	f := fa[:firstFields(b[i+2:], fa[:])]
	if len(f) < 20 {
		return st, fmt.Errorf("stat: %d fields after the command name, want 20", len(f))
	}
	st.state = string(f[0])
	nums := [...]struct {
		i int
		v *uint64
	}{{6, &st.flags}, {11, &st.utime}, {12, &st.stime}, {19, &st.starttime}}
	for _, n := range nums {
		v, err := strconv.ParseUint(string(f[n.i]), 10, 64)
		if err != nil {
			return st, fmt.Errorf("stat field %d: %w", n.i, err)
		}
		*n.v = v
	}
	ppid, err := strconv.Atoi(string(f[1]))
	if err != nil {
		return st, fmt.Errorf("stat ppid: %w", err)
	}
	threads, err := strconv.Atoi(string(f[17]))
	if err != nil {
		return st, fmt.Errorf("stat num_threads: %w", err)
	}
	st.ppid, st.numThreads = ppid, threads
	return st, nil
}

// firstFields splits b at ASCII white space into out, up to len(out)
// fields, and returns how many it found.
func firstFields(b []byte, out [][]byte) int {
	n := 0
	for n < len(out) {
		start := bytes.IndexFunc(b, func(r rune) bool { return !isSpace(r) })
		if start < 0 {
			break
		}
		b = b[start:]
		end := bytes.IndexFunc(b, isSpace)
		if end < 0 {
			end = len(b)
		}
		out[n], b = b[:end], b[end:]
		n++
	}
	return n
}

func isSpace(r rune) bool { return r == ' ' || r == '\n' || r == '\t' }

// ioKeys are the /proc/<pid>/io lines kept, in procNIO order.
var ioKeys = [procNIO]string{procIORChar: "rchar", procIOWChar: "wchar", procIOReadBytes: "read_bytes", procIOWriteBytes: "write_bytes"}

// parseIO reads the four counters of /proc/<pid>/io the collector keeps.
func parseIO(b []byte) ([procNIO]uint64, error) {
	var out [procNIO]uint64
	var seen [procNIO]bool
	for len(b) > 0 {
		line := b
		if j := bytes.IndexByte(b, '\n'); j >= 0 {
			line, b = b[:j], b[j+1:]
		} else {
			b = nil
		}
		k, v, ok := bytes.Cut(line, []byte(": "))
		if !ok {
			continue
		}
		for i, key := range ioKeys {
			if string(k) == key && !seen[i] {
				n, err := strconv.ParseUint(string(v), 10, 64)
				if err != nil {
					return out, fmt.Errorf("io %s: %w", key, err)
				}
				out[i], seen[i] = n, true
			}
		}
	}
	for i, ok := range seen {
		if !ok {
			return out, fmt.Errorf("io: no %s line", ioKeys[i])
		}
	}
	return out, nil
}

// fdCount counts a process's open descriptors. On procfs since Linux 6.2
// a stat of /proc/<pid>/fd gives their number as its size: one syscall
// instead of listing the directory. A size of 0 (an older kernel, a process
// with no descriptor, or a fixture tree) falls back to the listing.
func (r *procReader) fdCount(pid int, list func() (int, error)) (int, error) {
	if r.statFDs {
		var st unix.Stat_t
		if err := unix.Stat(r.root+"/"+strconv.Itoa(pid)+"/fd", &st); err == nil && st.Size > 0 {
			return int(st.Size), nil
		}
	}
	return list()
}

// isProcfs reports whether root is a mounted procfs (not a fixture tree).
func isProcfs(root string) bool {
	var fs unix.Statfs_t
	return unix.Statfs(root, &fs) == nil && fs.Type == unix.PROC_SUPER_MAGIC
}
