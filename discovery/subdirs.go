// SPDX-License-Identifier: Apache-2.0

package discovery

import (
	"bytes"
	"encoding/binary"
	"sync"

	"golang.org/x/sys/unix"
)

var direntBufs = sync.Pool{New: func() any { b := make([]byte, 16<<10); return &b }}

// dirent is a sub-directory: its name and inode number (on cgroupfs, the
// cgroup id), which tells a job directory from a new one of the same name.
type dirent struct {
	name string
	ino  uint64
}

// subdirs lists the names of dir's sub-directories.
func subdirs(dir string) []string {
	ents, _ := listDirs(dir)
	names := make([]string, len(ents))
	for i, e := range ents {
		names[i] = e.name
	}
	return names
}

// subdirsFd lists the names of the sub-directories of the open directory
// fd (named path). It reads the directory stream from a duplicate, so fd's
// own offset is untouched.
func subdirsFd(fd int, path string) []string {
	dup, err := unix.Openat(fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	defer unix.Close(dup)
	ents, _ := listFd(dup, path)
	names := make([]string, len(ents))
	for i, e := range ents {
		names[i] = e.name
	}
	return names
}

// listDirs lists dir's sub-directories. It reads the raw directory stream
// and keeps only entries typed as directories, so the dozens of interface
// files of a cgroup cost no allocation. ok is false when dir cannot be
// opened (gone, or not ours to read).
func listDirs(dir string) (ents []dirent, ok bool) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, false
	}
	defer unix.Close(fd)
	return listFd(fd, dir)
}

// listFd lists the sub-directories of the open directory fd (named dir).
func listFd(fd int, dir string) (ents []dirent, ok bool) {
	bp := direntBufs.Get().(*[]byte)
	defer direntBufs.Put(bp)
	buf := *bp
	for {
		n, err := unix.Getdents(fd, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil || n <= 0 {
			return ents, true
		}
		// Only an empty read ends a listing: a getdents that meets a
		// pending signal (the Go scheduler's SIGURG) returns the entries it
		// has so far, however few.
		ents = appendDirents(ents, dir, buf[:n])
	}
}

// appendDirents parses linux_dirent64 records: ino u64, off s64,
// reclen u16, type u8, name NUL-terminated.
func appendDirents(ents []dirent, dir string, b []byte) []dirent {
	for len(b) >= 19 {
		reclen := int(binary.NativeEndian.Uint16(b[16:18]))
		if reclen < 19 || reclen > len(b) {
			return ents
		}
		ino, typ, name := binary.NativeEndian.Uint64(b[0:8]), b[18], b[19:reclen]
		if i := bytes.IndexByte(name, 0); i >= 0 {
			name = name[:i]
		}
		b = b[reclen:]
		if s := string(name); s != "." && s != ".." && isDir(typ, dir, s) {
			ents = append(ents, dirent{name: s, ino: ino})
		}
	}
	return ents
}

// isDir trusts the entry's type; file systems that do not fill it in
// (DT_UNKNOWN) get an lstat.
func isDir(typ byte, dir, name string) bool {
	if typ != unix.DT_UNKNOWN {
		return typ == unix.DT_DIR
	}
	var st unix.Stat_t
	return unix.Lstat(dir+"/"+name, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR
}
