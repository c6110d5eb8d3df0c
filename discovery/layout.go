// SPDX-License-Identifier: Apache-2.0

package discovery

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// Layout says where the cgroup hierarchies of this node are mounted.
// V2 is the unified hierarchy ("" when absent); V1 maps a v1 controller
// name (memory, cpuacct, ...) to its mount point.
type Layout struct {
	V2 string
	V1 map[string]string
}

// Hybrid reports whether both a v2 mount and v1 controllers exist.
func (l Layout) Hybrid() bool { return l.V2 != "" && len(l.V1) > 0 }

func (l Layout) String() string {
	switch {
	case l.Hybrid():
		return "hybrid (v2 at " + l.V2 + ")"
	case l.V2 != "":
		return "v2 at " + l.V2
	case len(l.V1) > 0:
		return "v1"
	}
	return "none"
}

// v1Controllers are the controllers whose slurm trees discovery looks at,
// in order of preference for finding a job's processes.
var v1Controllers = []string{"memory", "cpuacct", "cpuset", "cpu", "blkio", "pids", "devices", "freezer"}

// DetectLayout finds the cgroup hierarchies. With root set (--path.cgroupfs)
// the tree itself tells its version, so fixtures, copies and chroots work;
// otherwise the mount table of the given procfs decides.
func DetectLayout(root, procfs string) (Layout, error) {
	if root != "" {
		return layoutFromTree(root)
	}
	f, err := os.Open(filepath.Join(procfs, "self", "mountinfo"))
	if err != nil {
		return Layout{}, err
	}
	defer f.Close()
	return layoutFromMountinfo(f)
}

func layoutFromTree(root string) (Layout, error) {
	l := Layout{V1: map[string]string{}}
	if exists(filepath.Join(root, "cgroup.controllers")) {
		l.V2 = root
		return l, nil
	}
	if exists(filepath.Join(root, "unified", "cgroup.controllers")) {
		l.V2 = filepath.Join(root, "unified")
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		return l, err
	}
	for _, e := range entries {
		if !e.IsDir() && e.Type()&os.ModeSymlink == 0 {
			continue
		}
		// Mounts such as "cpu,cpuacct" carry several controllers.
		for _, c := range strings.Split(e.Name(), ",") {
			if isV1Controller(c) {
				if _, seen := l.V1[c]; !seen {
					l.V1[c] = filepath.Join(root, e.Name())
				}
			}
		}
	}
	if l.V2 == "" && len(l.V1) == 0 {
		return l, fmt.Errorf("no cgroup hierarchy found under %s", root)
	}
	return l, nil
}

func layoutFromMountinfo(r io.Reader) (Layout, error) {
	l := Layout{V1: map[string]string{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		// id parent major:minor root mountpoint options [optional...] - fstype source superoptions
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		pf := strings.Fields(pre)
		qf := strings.Fields(post)
		if len(pf) < 5 || len(qf) < 3 {
			continue
		}
		mnt := unescapeMount(pf[4])
		switch qf[0] {
		case "cgroup2":
			if l.V2 == "" {
				l.V2 = mnt
			}
		case "cgroup":
			for _, opt := range strings.Split(qf[2], ",") {
				if isV1Controller(opt) {
					if _, seen := l.V1[opt]; !seen {
						l.V1[opt] = mnt
					}
				}
			}
		}
	}
	if err := sc.Err(); err != nil {
		return l, err
	}
	if l.V2 == "" && len(l.V1) == 0 {
		return l, fmt.Errorf("no cgroup mount in mountinfo")
	}
	return l, nil
}

func isV1Controller(name string) bool {
	for _, c := range v1Controllers {
		if c == name {
			return true
		}
	}
	return false
}

// unescapeMount undoes the octal escapes (\040 for space) of mountinfo.
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			var v int
			if _, err := fmt.Sscanf(s[i+1:i+4], "%03o", &v); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
