// SPDX-License-Identifier: Apache-2.0

package cgroup

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
)

// deviceNames turns "major:minor" into the kernel's device name (sda,
// nvme0n1) through sysfs, once per device.
type deviceNames struct {
	sysfs string
	mu    sync.Mutex
	names map[string]string
}

func newDeviceNames(sysfs string) *deviceNames {
	return &deviceNames{sysfs: sysfs, names: map[string]string{}}
}

func (d *deviceNames) name(majmin string) string {
	d.mu.Lock()
	defer d.mu.Unlock()
	if n, ok := d.names[majmin]; ok {
		return n
	}
	n := majmin
	if !strings.ContainsAny(majmin, "/.") {
		if b, err := os.ReadFile(filepath.Join(d.sysfs, "dev", "block", majmin, "uevent")); err == nil {
			sc := bufio.NewScanner(bytes.NewReader(b))
			for sc.Scan() {
				if v, ok := strings.CutPrefix(sc.Text(), "DEVNAME="); ok && v != "" {
					n = v
				}
			}
		}
	}
	// Bounded by the devices of the node; an unknown number keeps its numbers.
	if len(d.names) < 4096 {
		d.names[majmin] = n
	}
	return n
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
