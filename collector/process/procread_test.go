// SPDX-License-Identifier: Apache-2.0

package process

import "testing"

func TestParseStat(t *testing.T) {
	// A kernel line: the command name holds spaces and a ')'; the fields
	// after the 20th (52 in all) are not read.
	line := "4242 (my (prog) x) S 4200 4242 4242 0 -1 4194560 120 0 0 0 731 95 0 0 20 0 7 0 123456 1000 200 " +
		"18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 17 3 0 0 0 0 0 0 0 0 0 0 0 0 0\n"
	st, err := parseStat([]byte(line))
	want := rawStat{state: "S", ppid: 4200, flags: 4194560, utime: 731, stime: 95, numThreads: 7, starttime: 123456}
	if err != nil || st != want {
		t.Fatalf("parseStat = %+v, %v; want %+v", st, err, want)
	}
	// Runs of blanks and tabs separate fields like one space.
	st, err = parseStat([]byte("1 (a)  R\t1 0 0 0 0 5 0 0 0 0 10 20 0 0 0 0 3 0 99"))
	if want := (rawStat{state: "R", ppid: 1, flags: 5, utime: 10, stime: 20, numThreads: 3, starttime: 99}); err != nil || st != want {
		t.Fatalf("parseStat with tabs = %+v, %v; want %+v", st, err, want)
	}
	for _, bad := range []string{"", "1 (a", "1 (a) S 1 2 3", "1 (a) S x 0 0 0 0 5 0 0 0 0 10 20 0 0 0 0 3 0 99"} {
		if _, err := parseStat([]byte(bad)); err == nil {
			t.Errorf("parseStat(%q): no error", bad)
		}
	}
}
