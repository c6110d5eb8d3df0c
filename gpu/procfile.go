// SPDX-License-Identifier: Apache-2.0

package gpu

import (
	"bytes"
	"os"

	"golang.org/x/sys/unix"

	"github.com/jobscope/jobscope/internal/boundedread"
)

// Bounds on what the mapper reads of a job's processes, the same as job
// discovery's (docs/security.md): a job's user can grow its environment up
// to the kernel's argument limit, and many processes are read per scrape.
const (
	// maxEnviron is how much of a process's environment is read; Slurm's
	// variables come first, and what lies beyond is cut off.
	maxEnviron = 256 << 10
	// maxGPUValue bounds one GPU variable's value: a longer one is no
	// device list (16 UUIDs take 650 bytes) and is not used at all.
	maxGPUValue = 4 << 10
	// maxCgroupFile bounds /proc/<pid>/cgroup, about 1 KiB on a v1 host
	// with every controller.
	maxCgroupFile = 64 << 10
)

// readProcFile reads at most limit bytes of a procfs file. The kernel
// makes no symlink for environ or cgroup, so one is planted and is not
// followed (O_NOFOLLOW); O_NONBLOCK keeps a planted FIFO from holding the
// scrape. truncated says the file went on past limit.
func readProcFile(path string, limit int) (b []byte, truncated bool, err error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, false, &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd)
	b, truncated, err = boundedread.Fd(fd, limit)
	if err != nil {
		return nil, false, &os.PathError{Op: "read", Path: path, Err: err}
	}
	return b, truncated, nil
}

// readEnviron reads a process's environment up to maxEnviron; a cut one
// keeps only its whole records, so a value cut short never passes for the
// real one.
func readEnviron(path string) ([]byte, error) {
	b, truncated, err := readProcFile(path, maxEnviron)
	if err != nil {
		return nil, err
	}
	if truncated {
		b = b[:bytes.LastIndexByte(b, 0)+1]
	}
	return b, nil
}
