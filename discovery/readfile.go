// SPDX-License-Identifier: Apache-2.0

package discovery

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"

	"github.com/jobscope/jobscope/internal/boundedread"
)

// Bounds on what discovery reads. A job's user can grow its environment
// (up to the kernel's argument limit) and a planted file in a fixture or a
// broken prolog can be any size: neither may grow jobscope's memory or
// output.
const (
	// maxProps is the documented limit of a props file (docs/reliability.md);
	// a larger one is an error of that file, never memory.
	maxProps = 256 << 10
	// maxEnviron is how much of a process's environment is read; Slurm's
	// variables come first, and what lies beyond is cut off.
	maxEnviron = 256 << 10
	// maxValue bounds one variable's value: a longer one is not used at
	// all (user, account and partition names are short; a value this long is
	// no identity, and as a label it would repeat on every series of the job).
	maxValue = 256
)

var (
	errTooLarge   = errors.New("file larger than its limit")
	errNotRegular = errors.New("not a regular file")
)

// openRegular opens path for reading without blocking: O_NONBLOCK makes a
// FIFO's open return at once (it would wait for a writer), and anything but
// a regular file is refused before a read could block on it. Kernel
// interface files (cgroupfs, procfs) and props files are regular files.
// follow says whether a symlink as the final component is followed: never
// in cgroupfs and procfs, whose symlinks no one but the kernel should make;
// the props directory is root's and the prolog links a job's file under its
// SLUID.
func openRegular(dirfd int, path string, follow bool) (int, error) {
	flags := unix.O_RDONLY | unix.O_CLOEXEC | unix.O_NONBLOCK
	if !follow {
		flags |= unix.O_NOFOLLOW
	}
	fd, err := unix.Openat(dirfd, path, flags, 0)
	if err != nil {
		return -1, &os.PathError{Op: "open", Path: path, Err: err}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		_ = unix.Close(fd)
		return -1, &os.PathError{Op: "open", Path: path, Err: errNotRegular}
	}
	return fd, nil
}

// readProps reads a props file: a regular file of at most maxProps bytes.
func readProps(path string) ([]byte, error) {
	fd, err := openRegular(unix.AT_FDCWD, path, true)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	b, truncated, err := boundedread.Fd(fd, maxProps)
	if err == nil && truncated {
		err = errTooLarge
	}
	if err != nil {
		return nil, &os.PathError{Op: "read", Path: path, Err: err}
	}
	return b, nil
}
