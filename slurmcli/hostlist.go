// SPDX-License-Identifier: Apache-2.0

package slurmcli

import (
	"fmt"
	"strconv"
	"strings"
)

// ExpandHostlist expands a Slurm host list such as "node[01-03,7],gpu1"
// or "rack[1-2]-n[1-4]" into names, in order. It stops with an error past
// limit names, so a malformed or hostile range cannot exhaust memory.
func ExpandHostlist(s string, limit int) ([]string, error) {
	var out []string
	for _, item := range splitTopLevel(strings.TrimSpace(s)) {
		if item == "" {
			continue
		}
		names, err := expandHost(item, limit-len(out))
		if err != nil {
			return nil, fmt.Errorf("host list %q: %w", s, err)
		}
		out = append(out, names...)
	}
	return out, nil
}

// splitTopLevel splits at commas outside brackets.
func splitTopLevel(s string) []string {
	var out []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '[':
			depth++
		case ']':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	return append(out, s[start:])
}

// expandHost expands one item with any number of bracket groups.
func expandHost(item string, limit int) ([]string, error) {
	open := strings.IndexByte(item, '[')
	if open < 0 {
		if strings.ContainsRune(item, ']') {
			return nil, fmt.Errorf("unbalanced ']' in %q", item)
		}
		if limit < 1 {
			return nil, fmt.Errorf("more than the limit of names")
		}
		return []string{item}, nil
	}
	closing := strings.IndexByte(item[open:], ']')
	if closing < 0 {
		return nil, fmt.Errorf("unbalanced '[' in %q", item)
	}
	closing += open
	prefix, ranges, rest := item[:open], item[open+1:closing], item[closing+1:]
	tails, err := expandHost(rest, limit) // [""] when nothing follows
	if err != nil {
		return nil, err
	}
	var out []string
	for _, r := range strings.Split(ranges, ",") {
		lo, hi, isRange := strings.Cut(r, "-")
		if !isRange {
			hi = lo
		}
		a, err1 := strconv.Atoi(lo)
		b, err2 := strconv.Atoi(hi)
		if err1 != nil || err2 != nil || a < 0 || b < a {
			return nil, fmt.Errorf("range %q in %q", r, item)
		}
		if (b-a+1)*len(tails) > limit-len(out) {
			return nil, fmt.Errorf("more than the limit of names")
		}
		width := len(lo) // zero padding, as in node[001-100]
		for n := a; n <= b; n++ {
			num := strconv.Itoa(n)
			for len(num) < width {
				num = "0" + num
			}
			for _, t := range tails {
				out = append(out, prefix+num+t)
			}
		}
	}
	return out, nil
}
