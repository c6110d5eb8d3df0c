// SPDX-License-Identifier: Apache-2.0

package slurmcli

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Diag is sdiag's text output (`sdiag --json` does not exist before 23.02,
// so the text is what every version has). Values holds every "key: number"
// line by section and lower-case key, e.g. Values["main"]["last cycle"];
// timestamps ("Sat Nov 21 ... (1795262995)") hold the epoch seconds.
type Diag struct {
	Values    map[string]map[string]float64
	RPCByType []RPCStat
	RPCByUser []RPCStat
	// PendingRPCs is the agent queue by message type (Count only).
	PendingRPCs []RPCStat
}

// RPCStat is one line of the RPC tables; times are in microseconds.
type RPCStat struct {
	Name        string // message type, or user name
	Count       float64
	TotalMicros float64
}

// Diag sections.
const (
	DiagTop      = ""
	DiagMain     = "main"
	DiagBackfill = "backfill"
	diagRPCType  = "rpc_type"
	diagRPCUser  = "rpc_user"
	diagPending  = "pending"
	diagOther    = "other"
)

// Get returns a value and whether sdiag printed it.
func (d *Diag) Get(section, key string) (float64, bool) {
	v, ok := d.Values[section][key]
	return v, ok
}

// ParseSdiag reads `sdiag` output.
func ParseSdiag(r io.Reader) (*Diag, error) {
	d := &Diag{Values: map[string]map[string]float64{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	section := DiagTop
	seen := false
	for sc.Scan() {
		line := sc.Text()
		t := strings.TrimSpace(line)
		if t == "" || strings.HasPrefix(t, "***") {
			continue
		}
		indented := line[0] == '\t' || line[0] == ' '
		if !indented {
			switch {
			case strings.HasPrefix(t, "Main schedule statistics"):
				section = DiagMain
				continue
			case strings.HasPrefix(t, "Backfilling stats"):
				section = DiagBackfill
				continue
			case strings.HasPrefix(t, "Remote Procedure Call statistics by message type"):
				section = diagRPCType
				continue
			case strings.HasPrefix(t, "Remote Procedure Call statistics by user"):
				section = diagRPCUser
				continue
			case strings.HasPrefix(t, "Pending RPC statistics"):
				section = diagPending
				continue
			case strings.HasPrefix(t, "sdiag output at"), strings.HasPrefix(t, "Data since"):
				seen = true
				k, v, _ := strings.Cut(t, " at ")
				if strings.HasPrefix(t, "Data since") {
					k, v = "data since", strings.TrimPrefix(t, "Data since")
				}
				if n, ok := diagNumber(v); ok {
					d.set(DiagTop, strings.ToLower(k), n)
				}
				continue
			}
			k, v, ok := strings.Cut(t, ":")
			if !ok {
				section = diagOther
				continue
			}
			section = DiagTop
			if n, ok := diagNumber(v); ok {
				d.set(DiagTop, strings.ToLower(strings.TrimSpace(k)), n)
				seen = true
			}
			continue
		}
		switch section {
		case diagRPCType, diagRPCUser, diagPending:
			st, ok := parseRPCLine(t)
			if !ok {
				continue // "No pending RPCs" and the like
			}
			switch section {
			case diagRPCType:
				d.RPCByType = append(d.RPCByType, st)
			case diagRPCUser:
				d.RPCByUser = append(d.RPCByUser, st)
			default:
				d.PendingRPCs = append(d.PendingRPCs, st)
			}
		default:
			k, v, ok := strings.Cut(t, ":")
			if !ok {
				continue
			}
			if n, ok := diagNumber(v); ok {
				d.set(section, strings.ToLower(strings.TrimSpace(k)), n)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if !seen {
		return nil, fmt.Errorf("sdiag: no statistics in output")
	}
	return d, nil
}

func (d *Diag) set(section, key string, v float64) {
	m := d.Values[section]
	if m == nil {
		m = map[string]float64{}
		d.Values[section] = m
	}
	if _, dup := m[key]; !dup {
		m[key] = v
	}
}

// diagNumber reads "  106", "24 microseconds" or "Sat Nov 21 ... (1795262995)".
func diagNumber(v string) (float64, bool) {
	f := strings.Fields(v)
	if len(f) == 0 {
		return 0, false
	}
	if n, err := strconv.ParseFloat(f[0], 64); err == nil {
		return n, true
	}
	last := f[len(f)-1]
	if strings.HasPrefix(last, "(") && strings.HasSuffix(last, ")") {
		if n, err := strconv.ParseFloat(last[1:len(last)-1], 64); err == nil {
			return n, true
		}
	}
	return 0, false
}

// parseRPCLine reads "REQUEST_JOB_INFO ( 2003) count:39 ave_time:644 total_time:25134".
func parseRPCLine(t string) (RPCStat, bool) {
	open := strings.IndexByte(t, '(')
	closing := strings.IndexByte(t, ')')
	if open <= 0 || closing < open {
		return RPCStat{}, false
	}
	st := RPCStat{Name: strings.TrimSpace(t[:open])}
	if st.Name == "" {
		return RPCStat{}, false
	}
	gotCount := false
	for _, kv := range strings.Fields(t[closing+1:]) {
		k, v, ok := strings.Cut(kv, ":")
		if !ok {
			continue
		}
		n, err := strconv.ParseFloat(v, 64)
		if err != nil {
			continue
		}
		switch k {
		case "count":
			st.Count, gotCount = n, true
		case "total_time":
			st.TotalMicros = n
		}
	}
	return st, gotCount
}
