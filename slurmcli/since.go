// SPDX-License-Identifier: Apache-2.0

package slurmcli

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// sinceUnits are the units "N <unit> ago" takes (singular or plural).
var sinceUnits = map[string]time.Duration{
	"second": time.Second, "minute": time.Minute, "hour": time.Hour,
	"day": 24 * time.Hour, "week": 7 * 24 * time.Hour,
}

// ParseSince reads --collector.slurm_sacct.since: a time before now, as
//   - a relative time: "24 hours ago", "7 days ago", "1 week ago",
//     "30 minutes ago", "2 months ago" (calendar months), or a Go duration
//     ("24h");
//   - a date or time in loc: "2026-01-01", "2026-01-01T06:30:00",
//     "2026-01-01 06:30:00", or RFC 3339 with its own zone;
//   - "now", or a Unix timestamp in seconds ("1798761600").
func ParseSince(s string, now time.Time, loc *time.Location) (time.Time, error) {
	s = strings.TrimSpace(s)
	bad := func(why string) (time.Time, error) {
		return time.Time{}, fmt.Errorf("since %q: %s (want e.g. \"24 hours ago\", \"7 days ago\", \"1 week ago\", 24h, 2026-01-01, 2026-01-01T00:00:00 or a Unix time)", s, why)
	}
	if s == "" {
		return bad("empty")
	}
	if strings.EqualFold(s, "now") {
		return now, nil
	}
	if d, err := time.ParseDuration(s); err == nil {
		if d < 0 {
			return bad("negative duration")
		}
		return now.Add(-d), nil
	}
	if t, ok, err := parseAgo(s, now); ok {
		if err != nil {
			return bad(err.Error())
		}
		return t, nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	for _, layout := range []string{sacctTime, "2006-01-02 15:04:05", "2006-01-02T15:04", "2006-01-02"} {
		if t, err := time.ParseInLocation(layout, s, loc); err == nil {
			return t, nil
		}
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil && n > 0 {
		return time.Unix(n, 0), nil
	}
	return bad("not a time")
}

// parseAgo reads "N <unit>[s] ago"; ok says whether s had that shape.
func parseAgo(s string, now time.Time) (t time.Time, ok bool, err error) {
	f := strings.Fields(strings.ToLower(s))
	if len(f) != 3 || f[2] != "ago" {
		return time.Time{}, false, nil
	}
	n, err := strconv.Atoi(f[0])
	if err != nil || n < 0 {
		return time.Time{}, true, fmt.Errorf("%q is not a count", f[0])
	}
	unit := strings.TrimSuffix(f[1], "s")
	switch unit {
	case "month":
		return now.AddDate(0, -n, 0), true, nil
	case "year":
		return now.AddDate(-n, 0, 0), true, nil
	}
	d, known := sinceUnits[unit]
	if !known {
		return time.Time{}, true, fmt.Errorf("unknown unit %q", f[1])
	}
	return now.Add(-time.Duration(n) * d), true, nil
}
