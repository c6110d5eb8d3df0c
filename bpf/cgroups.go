// SPDX-License-Identifier: Apache-2.0

package bpf

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// V1Hierarchy returns the hierarchy id of a v1 controller from
// <procfs>/cgroups: the programs read the same number from the kernel's
// cgroup_root, and it is part of every v1 key.
func V1Hierarchy(procfs, controller string) (uint32, error) {
	f, err := os.Open(filepath.Join(procfs, "cgroups"))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	id, err := ParseHierarchy(f, controller)
	if err != nil {
		return 0, fmt.Errorf("%s/cgroups: %w", procfs, err)
	}
	return id, nil
}

// ParseHierarchy reads the hierarchy id of controller from /proc/cgroups
// text ("#subsys_name hierarchy num_cgroups enabled"). 0 (the controller is
// on v2 or unbound) is an error: v1 keys need a v1 hierarchy.
func ParseHierarchy(r io.Reader, controller string) (uint32, error) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 || fields[0] != controller {
			continue
		}
		id, err := strconv.ParseUint(fields[1], 10, 32)
		if err != nil {
			return 0, fmt.Errorf("bad hierarchy %q for %s", fields[1], controller)
		}
		if id == 0 {
			return 0, fmt.Errorf("controller %s is not on a v1 hierarchy", controller)
		}
		return uint32(id), nil
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("controller %s not listed", controller)
}

// DirKey is the key of a job directory: its inode is the kernfs node id the
// programs read (64-bit kernels), within the given hierarchy (0 for v2).
func DirKey(hierarchy uint32, dir string) (Key, error) {
	fi, err := os.Stat(dir)
	if err != nil {
		return Key{}, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return Key{}, fmt.Errorf("%s: no inode", dir)
	}
	return Key{Hierarchy: hierarchy, CgroupID: st.Ino}, nil
}
