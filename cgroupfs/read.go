// SPDX-License-Identifier: Apache-2.0

// Package cgroupfs reads and parses cgroup v1 and v2 interface files.
// Parsers are pure functions over bytes so they can be fuzzed; Reader
// reuses one buffer and opens files relative to an open directory, so a
// scrape of hundreds of jobs makes few allocations and no path walks.
package cgroupfs

import (
	"errors"
	"os"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
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
}

// NewReader returns a Reader with a small initial buffer.
func NewReader() *Reader { return &Reader{buf: make([]byte, 8<<10)} }

// Dir is an open cgroup directory; files are opened relative to it.
type Dir struct {
	fd   int
	path string
}

// OpenDir opens a cgroup directory for reading its files. A symlink as the
// directory is refused (O_NOFOLLOW): the kernel makes none in cgroupfs, so
// one is planted, and would make a job's series read another tree.
func (r *Reader) OpenDir(path string) (Dir, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return Dir{fd: -1}, &os.PathError{Op: "open", Path: path, Err: err}
	}
	return Dir{fd: fd, path: path}, nil
}

// Close releases the directory.
func (d Dir) Close() {
	if d.fd >= 0 {
		_ = unix.Close(d.fd)
	}
}

// Removed reports whether the directory has been deleted since it was
// opened (its cgroup is gone), telling a vanished job from an absent file.
func (d Dir) Removed() bool {
	var st unix.Stat_t
	return d.fd < 0 || unix.Fstat(d.fd, &st) != nil || st.Nlink == 0
}

// Path is the directory's path.
func (d Dir) Path() string { return d.path }

// ReadIn returns the content of file name in d, not through a symlink as
// name's last component. The slice is valid until the next read.
func (r *Reader) ReadIn(d Dir, name string) ([]byte, error) {
	// The path is built only when needed: a scrape reads thousands of files.
	path := func() string {
		if d.path == "" {
			return name
		}
		return d.path + "/" + name
	}
	// O_NOFOLLOW: a symlinked interface file (io.stat -> /etc/shadow) is
	// an error of that file (ELOOP), never its target's content.
	fd, err := unix.Openat(d.fd, name, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path(), Err: err}
	}
	defer unix.Close(fd)
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
		m, err := unix.Read(fd, r.buf[n:])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, &os.PathError{Op: "read", Path: path(), Err: err}
		}
		if m == 0 {
			return r.buf[:n], nil
		}
		n += m
	}
}

// Read returns the content of path. The slice is valid until the next read.
func (r *Reader) Read(path string) ([]byte, error) {
	if strings.HasPrefix(path, "/") {
		// openat ignores the directory for an absolute path: one open,
		// not a directory's and then the file's.
		return r.ReadIn(Dir{fd: unix.AT_FDCWD}, path)
	}
	i := len(path) - 1
	for i > 0 && path[i] != '/' {
		i--
	}
	d, err := r.OpenDir(path[:i])
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return r.ReadIn(d, path[i+1:])
}

// Gone reports whether err means the file or its cgroup no longer exists
// (a job ending mid-scrape), which is normal and silent.
func Gone(err error) bool {
	return errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ENODEV) || errors.Is(err, syscall.ESRCH)
}
