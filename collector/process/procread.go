// SPDX-License-Identifier: Apache-2.0

package process

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"
)

// The per-process files are read with raw syscalls into pooled buffers
// (pidDir): an os.File costs two more syscalls per file (non-blocking mode,
// poller registration) and the procfs library's parsers go through fmt; a
// scrape of 3,000 processes reads 6,000 such files. Profiled on 128 jobs of
// 6 processes, the library path spent a third of the process collector's
// time outside the kernel's own work.

// procScratch holds one reader's buffers: a file, a link target and a
// directory listing are used at the same time (fd targets while listing
// fd/, a thread's files while listing task/).
type procScratch struct {
	file, link, dents []byte
}

var procBufs = sync.Pool{New: func() any {
	return &procScratch{file: make([]byte, 4096), link: make([]byte, unix.PathMax), dents: make([]byte, 4096)}
}}

var errProcTooLarge = errors.New("larger than 4 KiB")

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
	err := parseCounters(b, "io", ioKeys[:], out[:])
	return out, err
}

// statusKeys are the /proc/<pid>/task/<tid>/status lines kept, in
// procNCounters order.
var statusKeys = [procNCounters]string{procCtrVoluntary: "voluntary_ctxt_switches", procCtrInvoluntary: "nonvoluntary_ctxt_switches"}

// parseCtxtSwitches reads a thread's voluntary and involuntary context
// switches from its status file.
func parseCtxtSwitches(b []byte) ([procNCounters]uint64, error) {
	var out [procNCounters]uint64
	err := parseCounters(b, "status", statusKeys[:], out[:])
	return out, err
}

// parseCounters fills out[i] from the first "keys[i]: <number>" line of a
// procfs file named file (in errors). Every key must be there: a missing
// or unparsable one is an error, as a file cut short or not the kernel's.
func parseCounters(b []byte, file string, keys []string, out []uint64) error {
	seen := make([]bool, len(keys))
	for len(b) > 0 {
		line := b
		if j := bytes.IndexByte(b, '\n'); j >= 0 {
			line, b = b[:j], b[j+1:]
		} else {
			b = nil
		}
		k, v, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			continue
		}
		for i, key := range keys {
			if string(k) == key && !seen[i] {
				n, err := strconv.ParseUint(string(bytes.TrimSpace(v)), 10, 64)
				if err != nil {
					return fmt.Errorf("%s %s: %w", file, key, err)
				}
				out[i], seen[i] = n, true
			}
		}
	}
	for i, ok := range seen {
		if !ok {
			return fmt.Errorf("%s: no %s line", file, keys[i])
		}
	}
	return nil
}

// fdCount counts a process's open descriptors. On procfs since Linux 6.2
// a stat of /proc/<pid>/fd gives their number as its size: one syscall
// instead of listing the directory. A size of 0 (an older kernel, a process
// with no descriptor, or a fixture tree) falls back to the listing.
func (r *procReader) fdCount(d pidDir, buf []byte) (int, error) {
	if r.statFDs {
		if size, ok := d.dirSize("fd"); ok && size > 0 {
			return int(size), nil
		}
	}
	fds, err := d.openDir("fd")
	if err != nil {
		return 0, err
	}
	defer fds.close()
	n := 0
	err = fds.each(buf, func([]byte) { n++ })
	return n, err
}

// isProcfs reports whether root is a mounted procfs (not a fixture tree).
func isProcfs(root string) bool {
	var fs unix.Statfs_t
	return unix.Statfs(root, &fs) == nil && fs.Type == unix.PROC_SUPER_MAGIC
}
