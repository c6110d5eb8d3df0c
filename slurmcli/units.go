// SPDX-License-Identifier: Apache-2.0

package slurmcli

import (
	"fmt"
	"strconv"
	"strings"
)

// TRES is a parsed TRES string ("cpu=2,mem=856M,gres/gpu=1").
type TRES struct {
	CPUs        float64
	MemoryBytes float64
	GPUs        float64
	Nodes       float64
}

// ParseTRES reads the TRES kinds jobscope uses and ignores the others
// (billing, energy, licenses, ...). Typed GPUs ("gres/gpu:a100=2") add up
// into GPUs only when no untyped gres/gpu total is present, since Slurm
// lists both the total and its typed parts.
func ParseTRES(s string) (TRES, error) {
	var t TRES
	var typedGPUs float64
	sawGPU := false
	for _, kv := range strings.Split(s, ",") {
		kv = strings.TrimSpace(kv)
		if kv == "" {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return TRES{}, fmt.Errorf("tres %q: no '='", kv)
		}
		switch {
		case k == "cpu":
			n, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return TRES{}, fmt.Errorf("tres cpu %q: %w", v, err)
			}
			t.CPUs = n
		case k == "mem":
			b, err := ParseMemory(v)
			if err != nil {
				return TRES{}, fmt.Errorf("tres mem: %w", err)
			}
			t.MemoryBytes = b
		case k == "node":
			n, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return TRES{}, fmt.Errorf("tres node %q: %w", v, err)
			}
			t.Nodes = n
		case k == "gres/gpu":
			n, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return TRES{}, fmt.Errorf("tres gpu %q: %w", v, err)
			}
			t.GPUs, sawGPU = n, true
		case strings.HasPrefix(k, "gres/gpu:"):
			n, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return TRES{}, fmt.Errorf("tres gpu %q: %w", v, err)
			}
			typedGPUs += n
		}
	}
	if !sawGPU {
		t.GPUs = typedGPUs
	}
	return t, nil
}

// ParseMemory reads a Slurm memory size: a number with an optional unit
// suffix K, M (the default), G, T, P, in powers of 1024, as squeue, sinfo
// and TRES strings print it. A trailing "n" or "c" (per node, per CPU, from
// sacct's ReqMem) is ignored: callers that care check it themselves.
func ParseMemory(s string) (float64, error) {
	s = strings.TrimSpace(s)
	s = strings.TrimRight(s, "nc")
	if s == "" {
		return 0, fmt.Errorf("empty memory size")
	}
	mult := float64(1 << 20)
	switch s[len(s)-1] {
	case 'K', 'k':
		mult = 1 << 10
	case 'M', 'm':
		mult = 1 << 20
	case 'G', 'g':
		mult = 1 << 30
	case 'T', 't':
		mult = 1 << 40
	case 'P', 'p':
		mult = 1 << 50
	}
	if c := s[len(s)-1]; c < '0' || c > '9' {
		s = s[:len(s)-1]
	}
	n, err := strconv.ParseFloat(s, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("memory size %q: not a size", s)
	}
	return n * mult, nil
}

// GresGPUs counts GPUs in a gres or tres-per-node string such as
// "gpu:2", "gpu:a100:2(S:0-1)", "gres:gpu:1", "gres/gpu:1" or
// "gpu:1,license:3". A bare "gpu" means one.
func GresGPUs(s string) float64 {
	var total float64
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if i := strings.IndexByte(item, '('); i >= 0 {
			item = item[:i]
		}
		item = strings.TrimPrefix(item, "gres:")
		item = strings.TrimPrefix(item, "gres/")
		parts := strings.Split(item, ":")
		if parts[0] != "gpu" {
			continue
		}
		n := 1.0
		if len(parts) > 1 {
			if v, err := strconv.ParseFloat(parts[len(parts)-1], 64); err == nil {
				n = v
			} else if len(parts) == 2 {
				n = 1 // "gpu:a100": a type, no count
			}
		}
		total += n
	}
	return total
}

// ArrayTaskCount counts the tasks in an array task string such as
// "1-3", "1,4,7-9", "0-15:4" or "1-100%5" (the %N limit does not change the
// count). It returns 1 for an empty or unreadable string: the record is at
// least one job.
func ArrayTaskCount(s string) int {
	total := 0
	if !forEachTaskRange(s, func(lo, hi, step int) { total += (hi-lo)/step + 1 }) || total < 1 {
		return 1
	}
	return total
}

// forEachTaskRange calls f for each part of an array task string, as
// lo, hi and step ("7" is 7, 7, 1); false when the string is empty or
// unreadable (f may have been called for the parts before the bad one).
func forEachTaskRange(s string, f func(lo, hi, step int)) bool {
	s, _, _ = strings.Cut(s, "%")
	s = strings.TrimSpace(s)
	if s == "" {
		return false
	}
	for _, part := range strings.Split(s, ",") {
		rng, stepStr, hasStep := strings.Cut(part, ":")
		step := 1
		if hasStep {
			v, err := strconv.Atoi(stepStr)
			if err != nil || v <= 0 {
				return false
			}
			step = v
		}
		lo, hi, isRange := strings.Cut(rng, "-")
		a, err := strconv.Atoi(lo)
		if err != nil || a < 0 {
			return false
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a {
				return false
			}
		}
		f(a, b, step)
	}
	return true
}
