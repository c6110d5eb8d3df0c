// SPDX-License-Identifier: Apache-2.0

package report

import (
	"strings"
	"testing"
	"time"
)

// The candidates of a reused id are listed one a line on stderr, whose
// filter keeps newlines: a cluster name, user or key holding one (all
// labels a job's environment could have set) must not add a line that
// reads as another candidate.
func TestDescribeOneLineEach(t *testing.T) {
	fake := "\n  key c1/777/1  user root  cluster c1  nodes n1  samples 2026-01-01T00:00:00Z .. 2026-01-01T01:00:00Z"
	cands := []*candidate{
		{key: "c1/777/1795000000", labels: map[string]string{lUser: "alice", lClust: "c1" + fake}, nodes: []string{"n1"}},
		{key: "k" + fake, labels: map[string]string{lUser: "bob" + fake, lClust: "c1"}, nodes: []string{"n2\nn3"}},
	}
	for _, c := range cands {
		c.first, c.last = time.Unix(1795000000, 0), time.Unix(1795003600, 0)
	}
	got := describe(cands)
	if n := strings.Count(got, "\n"); n != len(cands)-1 {
		t.Errorf("%d candidates on %d lines:\n%s", len(cands), n+1, got)
	}
	if !strings.Contains(got, "c1␊  key c1/777/1") {
		t.Errorf("the newline is not shown as ␊:\n%s", got)
	}
}
