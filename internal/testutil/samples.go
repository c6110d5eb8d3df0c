// SPDX-License-Identifier: Apache-2.0

package testutil

import (
	"bufio"
	"bytes"
	"strconv"
	"strings"
	"testing"
)

// Samples parses a text exposition (a scrape's body) into `name{labels}`,
// as exposed, to value. A series that appears twice fails the test: a
// scrape never holds duplicates, and a map would hide one.
func Samples(t testing.TB, body []byte) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			t.Fatalf("no value in %q", line)
		}
		series := line[:i]
		if _, dup := out[series]; dup {
			t.Fatalf("duplicate series %s", series)
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("bad value in %q: %v", line, err)
		}
		out[series] = v
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("exposition: %v", err)
	}
	return out
}
