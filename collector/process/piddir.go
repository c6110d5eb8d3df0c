// SPDX-License-Identifier: Apache-2.0

package process

import (
	"encoding/binary"
	"errors"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// pidDir is an open /proc/<pid> directory (or one below it: fd, task,
// task/<tid>). A process's files are opened relative to it, each with
// O_NOFOLLOW, and no directory is entered through a symlink: the kernel
// makes no symlink of /proc/<pid>, its stat, io, status, fd or task, so
// one there was planted (a fixture, a tree bind-mounted as --path.procfs)
// and would lend a job another process's or any file's content. The entries
// that are symlinks by nature (exe, fd/<n>) are read with readlinkat, never
// opened through.
//
// Holding the directory also ties the reads to one process: once it exits,
// lookups under its old directory fail, so a pid reused mid-read never mixes
// a new process's files into the old one's sample.
type pidDir struct {
	fd   int
	path string // for error messages only
}

// errSymlink stands for the error of an O_NOFOLLOW open of a symlink,
// whose own text hides what happened: ELOOP ("too many levels of symbolic
// links") for a file, ENOTDIR with O_DIRECTORY.
var errSymlink = errors.New("a symlink where procfs has none: not followed")

// openError is the error of opening name (path) in dirfd. Only a failed
// open pays for the lstat telling a symlink from a file that is not a
// directory.
func openError(dirfd int, name, path string, err error) error {
	if errors.Is(err, unix.ENOTDIR) {
		var st unix.Stat_t
		if unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
			err = unix.ELOOP
		}
	}
	if errors.Is(err, unix.ELOOP) {
		err = errSymlink
	}
	return &os.PathError{Op: "open", Path: path, Err: err}
}

// openPIDDir opens root/<pid>. root itself (--path.procfs) is the admin's
// and may be reached through symlinks.
func openPIDDir(root string, pid int) (pidDir, error) {
	path := root + "/" + strconv.Itoa(pid)
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return pidDir{fd: -1}, openError(unix.AT_FDCWD, path, path, err)
	}
	return pidDir{fd: fd, path: path}, nil
}

func (d pidDir) close() {
	if d.fd >= 0 {
		_ = unix.Close(d.fd)
	}
}

func (d pidDir) sub(name string) string { return d.path + "/" + name }

// openDir opens the directory name under d, not through a symlink.
func (d pidDir) openDir(name string) (pidDir, error) {
	fd, err := unix.Openat(d.fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return pidDir{fd: -1}, openError(d.fd, name, d.sub(name), err)
	}
	return pidDir{fd: fd, path: d.sub(name)}, nil
}

// read reads file name of d into buf with one open, one read and one close:
// a proc file fills a read whole, so a read that leaves the buffer room to
// spare was the last. A file that fills buf is errProcTooLarge.
func (d pidDir) read(name string, buf []byte) ([]byte, error) {
	// O_NONBLOCK: a planted FIFO's open would wait for a writer, and its
	// read for data, holding a worker past the scrape's deadline; procfs
	// files read the same either way.
	fd, err := unix.Openat(d.fd, name, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, openError(d.fd, name, d.sub(name), err)
	}
	defer unix.Close(fd)
	n := 0
	for {
		m, err := unix.Read(fd, buf[n:])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, &os.PathError{Op: "read", Path: d.sub(name), Err: err}
		}
		n += m
		switch {
		case m == 0 || n < len(buf):
			return buf[:n], nil
		case n == len(buf):
			return nil, &os.PathError{Op: "read", Path: d.sub(name), Err: errProcTooLarge}
		}
	}
}

// readlink returns the target of the link name in d (the link itself is
// read, not followed). A target that fills buf is errProcTooLarge: a
// kernel's link is at most PATH_MAX-1 bytes.
func (d pidDir) readlink(name string, buf []byte) ([]byte, error) {
	n, err := unix.Readlinkat(d.fd, name, buf)
	if err != nil {
		return nil, &os.PathError{Op: "readlink", Path: d.sub(name), Err: err}
	}
	if n >= len(buf) {
		return nil, &os.PathError{Op: "readlink", Path: d.sub(name), Err: errProcTooLarge}
	}
	return buf[:n], nil
}

// dirSize is the size lstat gives the directory name in d, and false when
// name is not a directory (a planted symlink is not looked through).
func (d pidDir) dirSize(name string) (int64, bool) {
	var st unix.Stat_t
	if unix.Fstatat(d.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return 0, false
	}
	return st.Size, true
}

// each calls f with the name of every entry of d but "." and "..", using
// buf for the listing. The name is valid only during the call. Parsing the
// records here keeps a listing free of a string per entry: on kernels
// before 6.2 the fd count is such a listing for every process.
func (d pidDir) each(buf []byte, f func(name []byte)) error {
	for {
		n, err := unix.Getdents(d.fd, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return &os.PathError{Op: "getdents", Path: d.path, Err: err}
		}
		if n <= 0 {
			return nil
		}
		// struct linux_dirent64: ino u64, off s64, reclen u16, type u8,
		// then the NUL-terminated name.
		for b := buf[:n]; len(b) >= 19; {
			reclen := int(binary.NativeEndian.Uint16(b[16:18]))
			if reclen < 19 || reclen > len(b) {
				return &os.PathError{Op: "getdents", Path: d.path, Err: errors.New("malformed directory entry")}
			}
			name := b[19:reclen]
			for i, c := range name {
				if c == 0 {
					name = name[:i]
					break
				}
			}
			if string(name) != "." && string(name) != ".." {
				f(name)
			}
			b = b[reclen:]
		}
	}
}

// atoiName parses a pid or fd number as a directory entry names it.
func atoiName(name []byte) (int, bool) {
	if len(name) == 0 || len(name) > 10 {
		return 0, false
	}
	n := 0
	for _, c := range name {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}
