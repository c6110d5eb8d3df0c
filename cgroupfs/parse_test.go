// SPDX-License-Identifier: Apache-2.0

package cgroupfs

import (
	"reflect"
	"testing"
)

func TestParsers(t *testing.T) {
	if v, err := ParseLimit([]byte("max\n")); err != nil || v != Unlimited {
		t.Errorf("max: %v %v", v, err)
	}
	if v, err := ParseLimit([]byte("9223372036854771712\n")); err != nil || v != Unlimited {
		t.Errorf("v1 unlimited sentinel: %v %v", v, err)
	}
	if v, err := ParseLimit([]byte("629145600\n")); err != nil || v != 629145600 {
		t.Errorf("limit: %v %v", v, err)
	}
	cpus, err := ParseCPUList([]byte("0-2,5,7-8\n"))
	if err != nil || !reflect.DeepEqual(cpus, []int{0, 1, 2, 5, 7, 8}) {
		t.Errorf("cpulist: %v %v", cpus, err)
	}
	if _, err := ParseCPUList([]byte("0-4294967295")); err == nil {
		t.Error("huge cpu range accepted")
	}
	p, err := ParsePSI([]byte("some avg10=0.00 avg60=0.00 avg300=0.00 total=1523000\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=7\n"))
	if err != nil || p.Some != 1523000 || p.Full != 7 || !p.HasFull {
		t.Errorf("psi: %+v %v", p, err)
	}
	st, err := ParseIOStat([]byte("8:0 rbytes=1 wbytes=2 rios=3 wios=4 dbytes=5 dios=6\n"))
	if err != nil || st[0] != (IOStat{"8:0", 1, 2, 3, 4, 5, 6}) {
		t.Errorf("io.stat: %+v %v", st, err)
	}
	bk, err := ParseBlkio([]byte("8:0 Read 10\n8:0 Write 20\n8:0 Sync 30\n8:0 Async 0\n8:0 Total 30\nTotal 30\n"))
	if err != nil || bk["8:0"] != [2]uint64{10, 20} {
		t.Errorf("blkio: %v %v", bk, err)
	}
	got := map[string]uint64{}
	if err := ParseFlatKeyed([]byte("user 4553\nsystem 27\n"), func(k []byte, v uint64) { got[string(k)] = v }); err != nil || got["user"] != 4553 {
		t.Errorf("flat: %v %v", got, err)
	}
}

func FuzzParsers(f *testing.F) {
	for _, s := range []string{
		"some avg10=0.00 avg60=0.00 avg300=0.00 total=1523000\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n",
		"8:0 rbytes=1048576 wbytes=524288000 rios=256 wios=4000 dbytes=0 dios=0\n",
		"8:0 Read 10\n8:0 Write 20\nTotal 30\n", "0-3,8,10-11\n", "45805755496 0 \n", "max\n",
		"anon 1879048192\nfile 241172480\n", "user 4553\nsystem 27\n",
	} {
		f.Add([]byte(s))
	}
	seen := map[string]bool{}
	realFiles(f, func(b []byte) {
		if !seen[string(b)] {
			seen[string(b)] = true
			f.Add(b)
		}
	})
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = ParseUint(b)
		_, _ = ParsePSI(b)
		_, _ = ParseIOStat(b)
		_, _ = ParseBlkio(b)
		_, _ = ParseCPUList(b)
		_, _ = ParseUintList(b)
		_, _ = ParseLimit(b)
		_ = ParseFlatKeyed(b, func([]byte, uint64) {})
	})
}
