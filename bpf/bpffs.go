// SPDX-License-Identifier: Apache-2.0

//go:build linux

package bpf

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

const bpffsMagic = 0xcafe4a11

// EnsurePinDir makes sure dir can hold pins: the nearest existing ancestor
// must be on a bpf filesystem. When /sys/fs/bpf (the standard mount point)
// is an empty non-bpffs directory, bpffs is mounted there, as systemd would;
// anything else is left alone and reported, since mounting over an unknown
// directory could hide what is in it.
func EnsurePinDir(dir string) error {
	dir = filepath.Clean(dir)
	anc := dir
	for !exists(anc) {
		parent := filepath.Dir(anc)
		if parent == anc {
			break
		}
		anc = parent
	}
	onBPF, err := isBPFFS(anc)
	if err != nil {
		return err
	}
	if !onBPF {
		const std = "/sys/fs/bpf"
		if !within(dir, std) {
			return fmt.Errorf("pin path %s is not on a bpf filesystem (mount one: mount -t bpf bpf %s)", dir, anc)
		}
		if std != anc && exists(std) {
			// /sys/fs/bpf exists but dir's ancestor is deeper: an odd layout.
			if ok, _ := isBPFFS(std); !ok {
				return fmt.Errorf("pin path %s: %s exists and is not a bpf filesystem", dir, anc)
			}
		}
		if err := mountBPFFS(std); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("pin path: %w", err)
	}
	return nil
}

func mountBPFFS(at string) error {
	if err := os.MkdirAll(at, 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", at, err)
	}
	entries, err := os.ReadDir(at)
	if err != nil {
		return err
	}
	if len(entries) > 0 {
		return fmt.Errorf("%s is not a bpf filesystem and is not empty: not mounting over it", at)
	}
	if err := unix.Mount("bpf", at, "bpf", 0, "mode=0700"); err != nil {
		return fmt.Errorf("mounting bpffs at %s: %w", at, err)
	}
	return nil
}

func isBPFFS(p string) (bool, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(p, &st); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return false, nil
		}
		return false, fmt.Errorf("statfs %s: %w", p, err)
	}
	return uint32(st.Type) == bpffsMagic, nil
}

func within(p, dir string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != ".." && !filepath.IsAbs(rel) && (len(rel) < 3 || rel[:3] != "../")
}
