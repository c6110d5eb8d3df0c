// SPDX-License-Identifier: Apache-2.0

package main

import (
	"compress/gzip"
	"fmt"
	"io"
	"os"
)

// entry is one file of the initramfs.
type entry struct {
	name  string
	mode  uint32 // type and permission bits
	rdev  [2]uint32
	data  []byte
	nlink uint32
}

const (
	sIFDIR = 0o040000
	sIFREG = 0o100000
	sIFCHR = 0o020000
)

// writeInitramfs writes a gzip'd cpio archive in the kernel's "newc" format
// (Documentation/driver-api/early-userspace/buffer-format.rst): vmcheck as
// /init, the jobscope binary, the mount points, and /dev/console, without
// which init starts with no stdout.
func writeInitramfs(path, initBin, jobscopeBin string) error {
	initData, err := os.ReadFile(initBin)
	if err != nil {
		return err
	}
	jsData, err := os.ReadFile(jobscopeBin)
	if err != nil {
		return err
	}
	entries := []entry{{name: "dev", mode: sIFDIR | 0o755}, {name: "dev/console", mode: sIFCHR | 0o600, rdev: [2]uint32{5, 1}}}
	for _, d := range []string{"proc", "sys", "tmp", "run", "bin"} {
		entries = append(entries, entry{name: d, mode: sIFDIR | 0o755})
	}
	entries = append(entries,
		entry{name: "init", mode: sIFREG | 0o755, data: initData},
		entry{name: "bin/jobscope", mode: sIFREG | 0o755, data: jsData})

	f, err := os.Create(path)
	if err != nil {
		return err
	}
	zw := gzip.NewWriter(f)
	for i, e := range entries {
		e.nlink = 1
		if e.mode&sIFDIR != 0 {
			e.nlink = 2
		}
		if err := writeEntry(zw, uint32(i+1), e); err != nil {
			f.Close()
			return err
		}
	}
	if err := writeEntry(zw, 0, entry{name: "TRAILER!!!", nlink: 1}); err != nil {
		f.Close()
		return err
	}
	if err := zw.Close(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func writeEntry(w io.Writer, ino uint32, e entry) error {
	hdr := fmt.Sprintf("070701%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X",
		ino, e.mode, 0, 0, e.nlink, 0, len(e.data), 0, 0, e.rdev[0], e.rdev[1], len(e.name)+1, 0)
	b := append([]byte(hdr), e.name...)
	b = append(b, 0)
	b = pad4(b)
	b = append(b, e.data...)
	b = pad4(b)
	_, err := w.Write(b)
	return err
}

func pad4(b []byte) []byte {
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}
