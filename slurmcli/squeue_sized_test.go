// SPDX-License-Identifier: Apache-2.0

package slurmcli

import (
	"bytes"
	"testing"
)

// TestSqueueJSONSizedByHint: a poll sized by the previous one's count
// allocates its list once, with no doubling's spare half (which the cache
// holds beside the previous list until the next poll), and reads the same
// jobs as an unsized parse.
func TestSqueueJSONSizedByHint(t *testing.T) {
	const n = 600
	data := bigSqueueJSON(t, n)
	plain, err := ParseSqueueJSON(bytes.NewReader(data))
	if err != nil || len(plain) != n {
		t.Fatal(len(plain), err)
	}
	sized, err := parseSqueueJSONSized(bytes.NewReader(data), n)
	if err != nil {
		t.Fatal(err)
	}
	if len(sized) != n || cap(sized) != n+n/16 {
		t.Errorf("sized by %d: len %d cap %d, want len %d cap %d", n, len(sized), cap(sized), n, n+n/16)
	}
	for i := range plain {
		if plain[i] != sized[i] {
			t.Fatalf("job %d: %+v, sized %+v", i, sized[i], plain[i])
		}
	}
	allocs := testing.AllocsPerRun(3, func() { _, _ = parseSqueueJSONSized(bytes.NewReader(data), n) })
	unsized := testing.AllocsPerRun(3, func() { _, _ = ParseSqueueJSON(bytes.NewReader(data)) })
	if allocs >= unsized {
		t.Errorf("sized parse: %.0f allocations, unsized %.0f: the hint saved no growth", allocs, unsized)
	}
}
