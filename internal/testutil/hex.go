// SPDX-License-Identifier: Apache-2.0

package testutil

import (
	"encoding/hex"
	"os"
	"strings"
	"testing"
)

// HexFile reads a byte capture written as hex: '#' comment lines, then
// bytes in hex separated by spaces (testdata/power/ipmi/*.hex).
func HexFile(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var s strings.Builder
	for _, line := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(line, "#") {
			s.WriteString(strings.ReplaceAll(line, " ", ""))
		}
	}
	out, err := hex.DecodeString(s.String())
	if err != nil {
		t.Fatal(err)
	}
	return out
}
