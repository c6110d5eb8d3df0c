// SPDX-License-Identifier: Apache-2.0

// Package boundedread reads an open file to its end, but never more than a
// bound: the files jobscope reads of a job (its processes' environments,
// /proc/<pid>/stat and status, props files) are as large as their writer
// makes them, and memory per scrape must not grow with them.
package boundedread

import "golang.org/x/sys/unix"

// Fd reads fd until its end or until more than limit bytes came, whichever
// is first, and returns at most limit bytes; truncated says the file went on
// past them. The buffer grows from 4 KiB as the file does, so a small file
// costs little whatever the bound. A read interrupted by a signal is retried.
func Fd(fd int, limit int) (b []byte, truncated bool, err error) {
	b = make([]byte, 0, min(limit+1, 4<<10))
	for {
		if len(b) == cap(b) {
			nb := make([]byte, len(b), min(2*cap(b), limit+1))
			copy(nb, b)
			b = nb
		}
		n, err := unix.Read(fd, b[len(b):cap(b)])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, false, err
		}
		if n <= 0 {
			return b, false, nil
		}
		b = b[:len(b)+n]
		if len(b) > limit {
			return b[:limit], true, nil
		}
	}
}
