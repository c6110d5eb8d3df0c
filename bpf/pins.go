// SPDX-License-Identifier: Apache-2.0

//go:build linux

package bpf

import (
	"errors"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// pinned says whether a map of the object is pinned: every map but the
// data sections (.rodata, .bss) the constants live in.
func pinned(name string) bool { return !strings.HasPrefix(name, ".") }

// Unpin removes the pinned links (detaching their programs) and maps
// (tests; a build with another map layout; an admin uninstalling).
func Unpin(pinPath string) error {
	spec, err := loadJobscope()
	if err != nil {
		return err
	}
	errs := []error{Detach(pinPath)}
	for name := range spec.Maps {
		if !pinned(name) {
			continue
		}
		if err := os.Remove(filepath.Join(pinPath, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// pinOwnerError explains a permission error met at the pin path when the
// pins, or their directory, belong to another user: typically root's pins
// from a manual run, which the service user (CAP_BPF but no CAP_DAC_OVERRIDE)
// may not open for writing. Without this the error reads like missing
// capabilities. nil when err is not about permissions or nothing there
// belongs to someone else.
func pinOwnerError(pinPath string, err error) *LoadError {
	if pinPath == "" || !errors.Is(err, os.ErrPermission) {
		return nil
	}
	return pinOwnerProblem(pinPath, os.Geteuid(), err)
}

func pinOwnerProblem(pinPath string, uid int, cause error) *LoadError {
	paths := []string{pinPath}
	if entries, err := os.ReadDir(pinPath); err == nil {
		for _, e := range entries {
			paths = append(paths, filepath.Join(pinPath, e.Name()))
		}
	}
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			continue
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok || int(st.Uid) == uid {
			continue
		}
		return &LoadError{"pin_owner", fmt.Errorf("%s belongs to %s, not to this process (uid %d), "+
			"so its pinned maps cannot be opened: pins left by a run as another user (often root). "+
			"Remove them (rm -r %s; the counters restart) or give them to this user (chown -R %d %s): %w",
			p, owner(st.Uid), uid, pinPath, uid, pinPath, cause)}
	}
	return nil
}

func owner(uid uint32) string {
	id := strconv.FormatUint(uint64(uid), 10)
	if u, err := user.LookupId(id); err == nil {
		return u.Username + " (uid " + id + ")"
	}
	return "uid " + id
}
