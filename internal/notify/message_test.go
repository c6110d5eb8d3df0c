// SPDX-License-Identifier: Apache-2.0

package notify

import (
	"strconv"
	"testing"
)

// The subject is a sentence: one job needs attention, several need it, and
// a long list is cut with a count rather than growing the header.
func TestDigestSubject(t *testing.T) {
	many := make([]string, 12)
	for i := range many {
		many[i] = strconv.Itoa(100 + i)
	}
	for _, c := range []struct {
		ids  []string
		want string
	}{
		{[]string{"15"}, "[jobscope] e2e: job 15 needs attention"},
		{[]string{"14", "15"}, "[jobscope] e2e: jobs 14, 15 need attention"},
		{many, "[jobscope] e2e: jobs 100, 101, 102, 103, 104, 105, 106, 107, 108, 109 and 2 more need attention"},
	} {
		if got := digestSubject("e2e", c.ids); got != c.want {
			t.Errorf("digestSubject(%v) = %q, want %q", c.ids, got, c.want)
		}
	}
}
