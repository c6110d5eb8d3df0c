// SPDX-License-Identifier: Apache-2.0

package slurmcli

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// Reservation is one advance reservation of `scontrol show reservation`.
type Reservation struct {
	Name       string
	Start, End time.Time
	// State is what scontrol's text says (ACTIVE, INACTIVE) in lower case;
	// empty from JSON, which has none: see ActiveAt.
	State     string
	Nodes     string // host list ("node[1-4]")
	NodeCount float64
	CoreCount float64
	CPUs      float64 // cpu= of its TRES; 0 when absent
	Flags     []string
	Partition string
	Users     string
	Accounts  string
}

// ActiveAt reports whether the reservation is in force at now: the text's
// state where there is one, else its start and end.
func (r Reservation) ActiveAt(now time.Time) bool {
	if r.State != "" {
		return r.State == "active"
	}
	return !now.Before(r.Start) && now.Before(r.End)
}

// ReservationTextArgs and ReservationJSONArgs list the reservations.
// scontrol has --json from 23.02 on; 22.05 refuses it (auto mode then uses
// the text for good).
var (
	ReservationTextArgs = []string{"-o", "show", "reservation"}
	ReservationJSONArgs = []string{"show", "reservation", "--json"}
)

// ParseReservationsText reads `scontrol show reservation`, with or
// without -o. Times are read in loc, the zone scontrol printed them in.
func ParseReservationsText(r io.Reader, loc *time.Location) ([]Reservation, error) {
	recs, err := parseScontrolBlocks(r, "ReservationName")
	if err != nil {
		return nil, err
	}
	out := make([]Reservation, 0, len(recs))
	for _, f := range recs {
		res := Reservation{
			Name:      f["ReservationName"],
			State:     strings.ToLower(f["State"]),
			Nodes:     Clean(f["Nodes"]),
			Partition: Clean(f["PartitionName"]),
			Users:     Clean(f["Users"]),
			Accounts:  Clean(f["Accounts"]),
			Flags:     splitList(Clean(f["Flags"])),
		}
		if res.Start, err = scontrolTime(f["StartTime"], loc); err != nil {
			return nil, fmt.Errorf("reservation %s: StartTime: %w", res.Name, err)
		}
		if res.End, err = scontrolTime(f["EndTime"], loc); err != nil {
			return nil, fmt.Errorf("reservation %s: EndTime: %w", res.Name, err)
		}
		res.NodeCount, _ = strconv.ParseFloat(f["NodeCnt"], 64)
		res.CoreCount, _ = strconv.ParseFloat(f["CoreCnt"], 64)
		if t, err := ParseTRES(Clean(f["TRES"])); err == nil {
			res.CPUs = t.CPUs
		}
		out = append(out, res)
	}
	return out, nil
}

type reservationsJSON struct {
	Errors       slurmErrors `json:"errors"`
	Reservations []struct {
		Name      string      `json:"name"`
		Start     flexNum     `json:"start_time"`
		End       flexNum     `json:"end_time"`
		NodeList  string      `json:"node_list"`
		NodeCount flexNum     `json:"node_count"`
		CoreCount flexNum     `json:"core_count"`
		TRES      string      `json:"tres"`
		Flags     flexStrings `json:"flags"`
		Partition string      `json:"partition"`
		Users     string      `json:"users"`
		Accounts  string      `json:"accounts"`
	} `json:"reservations"`
}

// ParseReservationsJSON reads `scontrol show reservation --json`.
func ParseReservationsJSON(r io.Reader) ([]Reservation, error) {
	var in reservationsJSON
	if err := decodeList(r, "reservation json", "reservations", &in, func() bool { return in.Reservations != nil }, func() slurmErrors { return in.Errors }); err != nil {
		return nil, err
	}
	out := make([]Reservation, 0, len(in.Reservations))
	for _, x := range in.Reservations {
		res := Reservation{
			Name: x.Name, Nodes: Clean(x.NodeList), NodeCount: x.NodeCount.V, CoreCount: x.CoreCount.V,
			Flags: x.Flags, Partition: Clean(x.Partition), Users: Clean(x.Users), Accounts: Clean(x.Accounts),
		}
		if !x.Start.Set || !x.End.Set {
			return nil, fmt.Errorf("reservation json: %s without start or end time", x.Name)
		}
		res.Start, res.End = time.Unix(int64(x.Start.V), 0), time.Unix(int64(x.End.V), 0)
		if t, err := ParseTRES(x.TRES); err == nil {
			res.CPUs = t.CPUs
		}
		out = append(out, res)
	}
	return out, nil
}

// parseScontrolBlocks reads `scontrol show <entity>` records that start
// with first=..., each on one line (-o) or over indented continuation lines.
// Lines before the first record ("No reservations in the system") are
// scontrol's way of saying there are none.
func parseScontrolBlocks(r io.Reader, first string) ([]map[string]string, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	var out []map[string]string
	var cur strings.Builder
	flush := func() {
		if cur.Len() > 0 {
			out = append(out, ParseKVLine(cur.String()))
			cur.Reset()
		}
	}
	line := 0
	for sc.Scan() {
		line++
		t := strings.TrimSpace(sc.Text())
		switch {
		case t == "":
			continue
		case strings.HasPrefix(t, first+"="):
			flush()
			cur.WriteString(t)
		case cur.Len() > 0:
			cur.WriteByte(' ')
			cur.WriteString(t)
		case strings.HasPrefix(t, "No "):
			continue
		default:
			return nil, fmt.Errorf("scontrol line %d: %q before any %s=", line, t, first)
		}
	}
	flush()
	return out, sc.Err()
}

// scontrolTime reads a time scontrol printed with SLURM_TIME_FORMAT=standard.
func scontrolTime(s string, loc *time.Location) (time.Time, error) {
	return time.ParseInLocation(sacctTime, s, loc)
}

// splitList splits a comma list, dropping empty items.
func splitList(s string) []string {
	var out []string
	for _, x := range strings.Split(s, ",") {
		if x = strings.TrimSpace(x); x != "" {
			out = append(out, x)
		}
	}
	return out
}
