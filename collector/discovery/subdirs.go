package discovery

import (
	"bytes"
	"encoding/binary"
	"sync"

	"golang.org/x/sys/unix"
)

var direntBufs = sync.Pool{New: func() any { b := make([]byte, 16<<10); return &b }}

// subdirs lists the names of dir's sub-directories. It reads the raw
// directory stream and keeps only entries typed as directories, so the
// dozens of interface files of a cgroup cost no allocation.
func subdirs(dir string) []string {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	defer unix.Close(fd)
	bp := direntBufs.Get().(*[]byte)
	defer direntBufs.Put(bp)
	buf := *bp
	var names []string
	for {
		n, err := unix.Getdents(fd, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil || n <= 0 {
			return names
		}
		names = appendDirNames(names, dir, buf[:n])
		// The kernel fills the buffer while entries remain: a short read
		// was the last one, which saves the empty read that ends a listing.
		if n < len(buf)-512 {
			return names
		}
	}
}

// appendDirNames parses linux_dirent64 records: ino u64, off s64,
// reclen u16, type u8, name NUL-terminated.
func appendDirNames(names []string, dir string, b []byte) []string {
	for len(b) >= 19 {
		reclen := int(binary.NativeEndian.Uint16(b[16:18]))
		if reclen < 19 || reclen > len(b) {
			return names
		}
		typ, name := b[18], b[19:reclen]
		if i := bytes.IndexByte(name, 0); i >= 0 {
			name = name[:i]
		}
		b = b[reclen:]
		if s := string(name); s != "." && s != ".." && isDir(typ, dir, s) {
			names = append(names, s)
		}
	}
	return names
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
