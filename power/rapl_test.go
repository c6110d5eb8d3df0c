// SPDX-License-Identifier: Apache-2.0

package power

import (
	"errors"
	"fmt"
	"io/fs"
	"testing"

	"github.com/jobscope/jobscope/internal/testutil"
)

func TestZones(t *testing.T) {
	r := NewRAPL("../testdata/power/node/scrape1/sys")
	zones, err := r.Zones()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, z := range zones {
		got = append(got, fmt.Sprintf("%s %s %s %d", z.ID, z.Domain, z.Socket, z.MaxRange))
	}
	want := []string{
		"intel-rapl:0 package 0 262143328850",
		"intel-rapl:0:0 dram 0 65712999613",
		"intel-rapl:0:1 core 0 262143328850",
		"intel-rapl:1 package 1 262143328850",
		"intel-rapl:1:0 dram 1 65712999613",
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("zones:\n got %q\nwant %q", got, want)
	}
}

func TestZonesLaptop(t *testing.T) {
	zones, err := NewRAPL("../testdata/power/laptop").Zones()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, z := range zones {
		got = append(got, string(z.Domain)+"/"+z.Socket)
	}
	if want := "[package/0 core/0 uncore/0 psys/]"; fmt.Sprint(got) != want {
		t.Fatalf("got %v want %s", got, want)
	}
}

func TestZonesAbsent(t *testing.T) {
	_, err := NewRAPL(t.TempDir()).Zones()
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("want ErrNotExist, got %v", err)
	}
}

// TestWrap reads the wrap fixture's two states: package-0 goes from 100 J
// below the top of its range to 150 J, so it used 250 J.
func TestWrap(t *testing.T) {
	dir := t.TempDir()
	testutil.CopyTree(t, "../testdata/power/wrap/1", dir)
	r := NewRAPL(dir)
	zones, err := r.Zones()
	if err != nil {
		t.Fatal(err)
	}
	first, err := r.Read(zones)
	if err != nil {
		t.Fatal(err)
	}
	testutil.CopyTree(t, "../testdata/power/wrap/2", dir)
	second, err := r.Read(zones)
	if err != nil {
		t.Fatal(err)
	}
	if d := second[0].Joules - first[0].Joules; d != 250 {
		t.Fatalf("energy across the wrap = %v J, want 250", d)
	}
	if first[0].Joules != 262043.32885 {
		t.Fatalf("first reading %v, want the raw value in joules", first[0].Joules)
	}
}

func TestIncrease(t *testing.T) {
	for _, c := range []struct{ prev, cur, max, want uint64 }{
		{10, 15, 100, 5},
		{90, 5, 100, 15}, // one wrap
		{90, 5, 0, 5},    // unknown range: counted as a restart from 0
		{200, 5, 100, 5}, // beyond range: a reset
		{7, 7, 100, 0},
	} {
		if got := Increase(c.prev, c.cur, c.max); got != c.want {
			t.Errorf("Increase(%d,%d,%d) = %d, want %d", c.prev, c.cur, c.max, got, c.want)
		}
	}
}

// TestPermission: since Linux 5.10 energy_uj is 0400 root. Root reads
// through any mode, so the refusal is injected.
func TestPermission(t *testing.T) {
	r := NewRAPL("../testdata/power/node/scrape1/sys")
	zones, err := r.Zones()
	if err != nil {
		t.Fatal(err)
	}
	r.readFile = func(p string) ([]byte, error) {
		return nil, &fs.PathError{Op: "open", Path: p, Err: fs.ErrPermission}
	}
	_, err = r.Read(zones)
	if !errors.Is(err, ErrPermission) {
		t.Fatalf("want ErrPermission, got %v", err)
	}
}
