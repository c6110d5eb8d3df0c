// SPDX-License-Identifier: Apache-2.0

package cgroupfs

import (
	"bytes"
	"errors"
	"math"
	"strconv"
)

// ErrMalformed is returned for content that does not have the expected shape.
var ErrMalformed = errors.New("malformed cgroup file")

// Unlimited is returned by ParseLimit for "max" and v1's huge sentinels.
const Unlimited = math.MaxUint64

// ParseUint parses a file holding one unsigned number.
func ParseUint(b []byte) (uint64, error) {
	s := bytes.TrimSpace(b)
	if len(s) == 0 {
		return 0, ErrMalformed
	}
	v, err := strconv.ParseUint(string(s), 10, 64)
	if err != nil {
		return 0, ErrMalformed
	}
	return v, nil
}

// ParseLimit parses a limit: "max" (v2) or a value at or above v1's
// page-rounded 2^63 sentinel means unlimited.
func ParseLimit(b []byte) (uint64, error) {
	s := bytes.TrimSpace(b)
	if string(s) == "max" {
		return Unlimited, nil
	}
	v, err := ParseUint(s)
	if err != nil {
		return 0, err
	}
	if v >= 1<<62 {
		return Unlimited, nil
	}
	return v, nil
}

// ParseFlatKeyed parses "key value" lines (memory.stat, cpu.stat,
// memory.events, cpuacct.stat) calling fn for each numeric pair; key points
// into b (no allocation per line). Lines that do not parse are skipped; an
// error says some did.
func ParseFlatKeyed(b []byte, fn func(key []byte, v uint64)) error {
	if len(bytes.TrimSpace(b)) == 0 {
		return ErrMalformed
	}
	var bad bool
	for len(b) > 0 {
		var line []byte
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			line, b = b[:i], b[i+1:]
		} else {
			line, b = b, nil
		}
		if len(line) == 0 {
			continue
		}
		sp := bytes.IndexByte(line, ' ')
		if sp <= 0 {
			bad = true
			continue
		}
		v, ok := parseDecimal(bytes.TrimSpace(line[sp+1:]))
		if !ok {
			bad = true
			continue
		}
		fn(line[:sp], v)
	}
	if bad {
		return ErrMalformed
	}
	return nil
}

// PSI is one line of a pressure file: total stall time in microseconds.
type PSI struct {
	Some, Full       uint64
	HasSome, HasFull bool
}

// ParsePSI parses cpu.pressure / memory.pressure / io.pressure.
func ParsePSI(b []byte) (PSI, error) {
	var p PSI
	for _, line := range bytes.Split(b, []byte{'\n'}) {
		f := bytes.Fields(line)
		if len(f) == 0 {
			continue
		}
		var total []byte
		for _, kv := range f[1:] {
			if bytes.HasPrefix(kv, []byte("total=")) {
				total = kv[len("total="):]
			}
		}
		if total == nil {
			return p, ErrMalformed
		}
		v, err := strconv.ParseUint(string(total), 10, 64)
		if err != nil {
			return p, ErrMalformed
		}
		switch string(f[0]) {
		case "some":
			p.Some, p.HasSome = v, true
		case "full":
			p.Full, p.HasFull = v, true
		}
	}
	if !p.HasSome {
		return p, ErrMalformed
	}
	return p, nil
}

// IOStat is the block IO of one device.
type IOStat struct {
	Device                   string // "major:minor"
	ReadBytes, WriteBytes    uint64
	ReadOps, WriteOps        uint64
	DiscardBytes, DiscardOps uint64
}

// ParseIOStat parses v2 io.stat: "8:0 rbytes=1 wbytes=2 rios=3 wios=4 dbytes=0 dios=0".
func ParseIOStat(b []byte) ([]IOStat, error) {
	var out []IOStat
	var bad bool
	for _, line := range bytes.Split(b, []byte{'\n'}) {
		f := bytes.Fields(line)
		if len(f) == 0 {
			continue
		}
		if bytes.IndexByte(f[0], ':') <= 0 {
			bad = true
			continue
		}
		s := IOStat{Device: string(f[0])}
		for _, kv := range f[1:] {
			k, v, ok := bytes.Cut(kv, []byte{'='})
			if !ok {
				continue
			}
			n, err := strconv.ParseUint(string(v), 10, 64)
			if err != nil {
				bad = true
				continue
			}
			switch string(k) {
			case "rbytes":
				s.ReadBytes = n
			case "wbytes":
				s.WriteBytes = n
			case "rios":
				s.ReadOps = n
			case "wios":
				s.WriteOps = n
			case "dbytes":
				s.DiscardBytes = n
			case "dios":
				s.DiscardOps = n
			}
		}
		out = append(out, s)
	}
	if bad {
		return out, ErrMalformed
	}
	return out, nil
}

// ParseBlkio parses a v1 blkio file such as blkio.throttle.io_service_bytes:
// "8:0 Read 123" lines and a final "Total N" line, into per-device read and
// write values.
func ParseBlkio(b []byte) (map[string][2]uint64, error) {
	out := map[string][2]uint64{}
	var bad bool
	for _, line := range bytes.Split(b, []byte{'\n'}) {
		f := bytes.Fields(line)
		if len(f) == 0 || (len(f) == 2 && string(f[0]) == "Total") {
			continue
		}
		if len(f) != 3 || bytes.IndexByte(f[0], ':') <= 0 {
			bad = true
			continue
		}
		v, err := strconv.ParseUint(string(f[2]), 10, 64)
		if err != nil {
			bad = true
			continue
		}
		cur := out[string(f[0])]
		switch string(f[1]) {
		case "Read":
			cur[0] = v
		case "Write":
			cur[1] = v
		default:
			continue
		}
		out[string(f[0])] = cur
	}
	if bad {
		return out, ErrMalformed
	}
	return out, nil
}

// ParseCPUList parses a cpuset list such as "0-3,8,10-11".
func ParseCPUList(b []byte) ([]int, error) {
	s := bytes.TrimSpace(b)
	if len(s) == 0 {
		return nil, nil
	}
	var cpus []int
	for _, part := range bytes.Split(s, []byte{','}) {
		lo, hi, isRange := bytes.Cut(part, []byte{'-'})
		a, err := strconv.Atoi(string(lo))
		if err != nil || a < 0 {
			return nil, ErrMalformed
		}
		z := a
		if isRange {
			if z, err = strconv.Atoi(string(hi)); err != nil || z < a {
				return nil, ErrMalformed
			}
		}
		if z-a > 1<<16 {
			return nil, ErrMalformed
		}
		for c := a; c <= z; c++ {
			cpus = append(cpus, c)
		}
	}
	return cpus, nil
}

// ParseUintList parses whitespace-separated numbers (cpuacct.usage_percpu).
func ParseUintList(b []byte) ([]uint64, error) {
	f := bytes.Fields(b)
	out := make([]uint64, 0, len(f))
	for _, x := range f {
		v, err := strconv.ParseUint(string(x), 10, 64)
		if err != nil {
			return nil, ErrMalformed
		}
		out = append(out, v)
	}
	if len(out) == 0 {
		return nil, ErrMalformed
	}
	return out, nil
}

// parseDecimal parses an unsigned decimal without converting to a string.
func parseDecimal(b []byte) (uint64, bool) {
	if len(b) == 0 || len(b) > 20 {
		return 0, false
	}
	var v uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		if v > (1<<64-1-d)/10 {
			return 0, false
		}
		v = v*10 + d
	}
	return v, true
}
