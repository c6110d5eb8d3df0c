// SPDX-License-Identifier: Apache-2.0

package slurmcli

import (
	"bufio"
	"io"
	"strings"
)

// ParseKVLine splits one line of `scontrol show ... -o` output into its
// Key=Value fields. Values may contain spaces (OS=Linux 6.1 #1 SMP,
// Reason=Not responding): a word that does not start with Key= continues
// the previous value. When a key repeats, the first one wins, so text a user
// put in a later free-text field (Comment=, a job name) cannot override it.
func ParseKVLine(line string) map[string]string {
	out := map[string]string{}
	last := ""
	for _, w := range strings.Fields(line) {
		if k, v, ok := cutKey(w); ok {
			if _, dup := out[k]; dup {
				last = "" // ignore the repeat and what continues it
				continue
			}
			out[k] = v
			last = k
			continue
		}
		if last != "" {
			out[last] += " " + w
		}
	}
	return out
}

// cutKey splits "Key=value" where Key looks like a scontrol field name
// (letters, digits, and the ':', '/', '_' of AllocNode:Sid, CPUs/Task).
func cutKey(w string) (string, string, bool) {
	i := strings.IndexByte(w, '=')
	if i <= 0 {
		return "", "", false
	}
	k := w[:i]
	c := k[0]
	if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z') {
		return "", "", false
	}
	for j := 1; j < len(k); j++ {
		c := k[j]
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == ':' || c == '/') {
			return "", "", false
		}
	}
	return k, w[i+1:], true
}

// ParseScontrolRecords reads `scontrol show <entity> -o` output: one record
// per non-empty line.
func ParseScontrolRecords(r io.Reader) ([]map[string]string, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	var out []map[string]string
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		out = append(out, ParseKVLine(line))
	}
	return out, sc.Err()
}
