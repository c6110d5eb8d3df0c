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

// The io and status parsers keep the first line of each key, and a file
// without one of them (cut short, or not the kernel's) is an error.
func TestParseIOAndCtxtSwitches(t *testing.T) {
	io := "rchar: 10\nwchar: 20\nsyscr: 3\nsyscw: 4\nread_bytes: 30\nwrite_bytes: 40\ncancelled_write_bytes: 0\nrchar: 99\n"
	got, err := parseIO([]byte(io))
	if want := [procNIO]uint64{procIORChar: 10, procIOWChar: 20, procIOReadBytes: 30, procIOWriteBytes: 40}; err != nil || got != want {
		t.Errorf("parseIO = %v, %v; want %v", got, err, want)
	}
	st := "Name:\tx\nvoluntary_ctxt_switches:\t7\nnonvoluntary_ctxt_switches:\t8"
	ctrs, err := parseCtxtSwitches([]byte(st))
	if want := [procNCounters]uint64{procCtrVoluntary: 7, procCtrInvoluntary: 8}; err != nil || ctrs != want {
		t.Errorf("parseCtxtSwitches = %v, %v; want %v", ctrs, err, want)
	}
	for _, bad := range []string{"rchar: 1\nwchar: 2\nread_bytes: 3\n", "rchar: 1\nwchar: x\nread_bytes: 3\nwrite_bytes: 4\n"} {
		if _, err := parseIO([]byte(bad)); err == nil {
			t.Errorf("parseIO(%q): no error", bad)
		}
	}
	if _, err := parseCtxtSwitches([]byte("voluntary_ctxt_switches:\t7\n")); err == nil {
		t.Error("parseCtxtSwitches without nonvoluntary_ctxt_switches: no error")
	}
}
