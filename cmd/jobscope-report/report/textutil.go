// SPDX-License-Identifier: Apache-2.0

package report

import (
	"strings"
	"unicode/utf8"
)

// units stay on the line of the number before them.
var units = map[string]bool{"B": true, "KiB": true, "MiB": true, "GiB": true, "TiB": true, "PiB": true,
	"s": true, "kWh": true, "gCO2e": true, "cores": true, "GPUs": true}

// words splits at spaces, keeping "3.2 GiB" and "12 s" whole.
func words(para string) []string {
	var out []string
	for _, w := range strings.Fields(para) {
		if n := len(out); n > 0 && (units[strings.TrimRight(w, ",;:.)")]) {
			out[n-1] += " " + w
			continue
		}
		out = append(out, w)
	}
	return out
}

// wrap breaks text into lines of at most width runes at spaces.
func wrap(text string, width int) []string {
	var lines []string
	for _, para := range strings.Split(text, "\n") {
		line := ""
		for _, word := range words(para) {
			for utf8.RuneCountInString(word) > width {
				if line != "" {
					lines, line = append(lines, line), ""
				}
				r := []rune(word)
				lines, word = append(lines, string(r[:width])), string(r[width:])
			}
			switch {
			case line == "":
				line = word
			case utf8.RuneCountInString(line)+1+utf8.RuneCountInString(word) <= width:
				line += " " + word
			default:
				lines, line = append(lines, line), word
			}
		}
		lines = append(lines, line)
	}
	return lines
}

func clip(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

func nonEmpty(parts []string) []string {
	var out []string
	for _, p := range parts {
		if p != "" {
			out = append(out, p)
		}
	}
	return out
}

func opt(prefix, v string) string {
	if v == "" {
		return ""
	}
	return prefix + v
}

func optPct(prefix string, v *float64) string {
	if v == nil {
		return ""
	}
	return prefix + pct(*v)
}

func optBytes(prefix string, v *float64) string {
	if v == nil {
		return ""
	}
	return prefix + bytesStr(*v)
}

func optSeconds(prefix string, v *float64) string {
	if v == nil {
		return ""
	}
	return prefix + seconds(*v)
}

func optNum(prefix string, v *float64, suffix ...string) string {
	if v == nil {
		return ""
	}
	return prefix + num(*v) + strings.Join(suffix, "")
}

func bytesOr(v *float64) string {
	if v == nil {
		return "-"
	}
	return bytesStr(*v)
}

func pctOr(v *float64) string {
	if v == nil {
		return "-"
	}
	return pct(*v)
}

func numOr(v *float64) string {
	if v == nil {
		return "-"
	}
	return num(*v)
}
