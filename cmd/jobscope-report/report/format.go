// SPDX-License-Identifier: Apache-2.0

package report

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// pct renders a fraction: "42%", "3.5%" under 10%, "0%" for zero.
func pct(f float64) string {
	p := f * 100
	switch {
	case p == 0:
		return "0%"
	case math.Abs(p) < 10:
		return strconv.FormatFloat(p, 'f', 1, 64) + "%"
	}
	return strconv.FormatFloat(p, 'f', 0, 64) + "%"
}

// num renders a count or a small figure with at most two decimals and
// thousands separators.
func num(f float64) string {
	if f != math.Trunc(f) && math.Abs(f) < 100 {
		s := strconv.FormatFloat(f, 'f', 2, 64)
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
		return s
	}
	s := strconv.FormatFloat(math.Round(f), 'f', 0, 64)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	if neg {
		s = "-" + s
	}
	return s
}

// bytesStr renders a size in IEC units: "512 B", "3.2 MiB", "64 GiB".
func bytesStr(b float64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB", "PiB"}
	i := 0
	for math.Abs(b) >= 1024 && i < len(units)-1 {
		b /= 1024
		i++
	}
	if i == 0 || b >= 100 || b == math.Trunc(b) {
		return fmt.Sprintf("%.0f %s", b, units[i])
	}
	return fmt.Sprintf("%.1f %s", b, units[i])
}

// fmtDuration renders seconds as "45s", "3m 20s", "2h 05m", "3d 04h".
func fmtDuration(sec float64) string {
	d := time.Duration(math.Round(sec)) * time.Second
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm %02ds", int(d.Minutes()), int(d.Seconds())%60)
	case d < 24*time.Hour:
		return fmt.Sprintf("%dh %02dm", int(d.Hours()), int(d.Minutes())%60)
	}
	return fmt.Sprintf("%dd %02dh", int(d.Hours())/24, int(d.Hours())%24)
}

// seconds renders CPU time precisely enough to compare with sacct.
func seconds(s float64) string {
	if s < 100 {
		return strconv.FormatFloat(s, 'f', 1, 64) + " s"
	}
	return fmtDuration(s) + " (" + num(s) + " s)"
}

func plural(n float64, one, singular, many string) string {
	if n == 1 {
		return one + " " + singular
	}
	return num(n) + " " + many
}

// when renders a time in the report's zone.
func when(t time.Time, loc *time.Location) string {
	return t.In(loc).Format("2006-01-02 15:04:05 MST")
}
