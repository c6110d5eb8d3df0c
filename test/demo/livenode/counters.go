// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// scaleCPUStat writes the fixture's cpu.stat with its time counters
// multiplied by scale: a job that keeps its pace for longer.
func scaleCPUStat(from, to string, scale float64) error {
	b, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	var out bytes.Buffer
	for _, line := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		key, val, ok := strings.Cut(line, " ")
		if ok && (key == "usage_usec" || key == "user_usec" || key == "system_usec") {
			v, err := strconv.ParseUint(val, 10, 64)
			if err != nil {
				return fmt.Errorf("%s: %w", from, err)
			}
			line = fmt.Sprintf("%s %d", key, uint64(float64(v)*scale))
		}
		out.WriteString(line + "\n")
	}
	return writeAtomic(to, fixUsage(out.Bytes()))
}

// fixUsage makes usage_usec the sum of user_usec and system_usec after
// rounding, as the kernel's cputime adjustment keeps them.
func fixUsage(b []byte) []byte {
	var user, system uint64
	lines := strings.Split(string(b), "\n")
	for _, l := range lines {
		if v, ok := strings.CutPrefix(l, "user_usec "); ok {
			user, _ = strconv.ParseUint(v, 10, 64)
		}
		if v, ok := strings.CutPrefix(l, "system_usec "); ok {
			system, _ = strconv.ParseUint(v, 10, 64)
		}
	}
	for i, l := range lines {
		if strings.HasPrefix(l, "usage_usec ") {
			lines[i] = fmt.Sprintf("usage_usec %d", user+system)
		}
	}
	return []byte(strings.Join(lines, "\n"))
}

// advanceRAPL writes a zone's energy_uj as the fixture's value plus joules,
// wrapped at max_energy_range_uj like the kernel's counter.
func advanceRAPL(from, to string, joules float64) error {
	base, err := readUint(filepath.Join(from, "energy_uj"))
	if err != nil {
		return err
	}
	limit, err := readUint(filepath.Join(from, "max_energy_range_uj"))
	if err != nil {
		return err
	}
	v := (base + uint64(joules*1e6)) % (limit + 1)
	return writeAtomic(filepath.Join(to, "energy_uj"), []byte(strconv.FormatUint(v, 10)+"\n"))
}

// shiftStart moves SLURM_JOB_START_TIME by shift seconds in a props file
// (lines) or a process environment (NUL-separated).
func shiftStart(from, to string, shift int64) error {
	b, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	sep := byte('\n')
	if bytes.IndexByte(b, 0) >= 0 {
		sep = 0
	}
	fields := bytes.Split(b, []byte{sep})
	found := false
	for i, f := range fields {
		if v, ok := bytes.CutPrefix(f, []byte("SLURM_JOB_START_TIME=")); ok {
			t, err := strconv.ParseInt(string(v), 10, 64)
			if err != nil {
				return fmt.Errorf("%s: %w", from, err)
			}
			fields[i] = []byte("SLURM_JOB_START_TIME=" + strconv.FormatInt(t+shift, 10))
			found = true
		}
	}
	if !found {
		return fmt.Errorf("%s: no SLURM_JOB_START_TIME", from)
	}
	return writeAtomic(to, bytes.Join(fields, []byte{sep}))
}

func readUint(path string) (uint64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
}
