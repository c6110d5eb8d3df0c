// SPDX-License-Identifier: Apache-2.0

package slurmcli

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/jobscope/jobscope/internal/testutil"
	"github.com/jobscope/jobscope/slurmcli/slurmclitest"
)

func TestSacctIncremental(t *testing.T) {
	b := slurmclitest.New(t)
	b.Sacct(fixtures, "running")
	clk := testutil.NewClock(time.Date(2026, 11, 21, 12, 10, 0, 0, time.UTC))
	c := newTestCache(t, b, clk, FormatAuto, 30*time.Second)
	since := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	c.EnableSacct(NewSacctCounter(since, 10*time.Minute, 0, time.UTC))
	counts := func() map[EndKey]float64 {
		t.Helper()
		v, _, ok, err := serve(context.Background(), c, c.Sacct)
		if !ok {
			t.Fatalf("no sacct value: %v", err)
		}
		return v.Ended
	}
	// 12:00-12:10, "running" capture: job 1 (completed 12:09:25) and
	// job 11 (cancelled 12:09:43) have ended.
	want := map[EndKey]float64{
		{"completed", "debug", "root"}:    1,
		{"cancelled", "debug", "physics"}: 1,
	}
	if got := counts(); !reflect.DeepEqual(got, want) {
		t.Fatalf("first window: %v, want %v", got, want)
	}
	// 12:10-12:15, "after" capture: the nine others end; 1 and 11 are
	// listed again and must not count twice.
	b.Sacct(fixtures, "after")
	clk.Add(5 * time.Minute)
	want = map[EndKey]float64{
		{"completed", "debug", "root"}:          1,
		{"cancelled", "debug", "physics"}:       1,
		{"completed", "debug", "physics"}:       1, // 2
		{"completed", "batch", "chemistry"}:     4, // 3, 7_1, 7_2, 7_3
		{"completed", "debug", "chemistry"}:     1, // 4
		{"out_of_memory", "batch", "chemistry"}: 1, // 5
		{"failed", "debug", "chemistry"}:        1, // 6
		{"timeout", "debug", "physics"}:         1, // 9
	}
	if got := counts(); !reflect.DeepEqual(got, want) {
		t.Fatalf("second window: %v, want %v", got, want)
	}
	// A failing poll changes nothing and loses nothing; a later one adds
	// nothing new.
	b.SetFail("sacct", true)
	clk.Add(time.Minute)
	if v, _, _, err := serve(context.Background(), c, c.Sacct); err == nil || !reflect.DeepEqual(v.Ended, want) {
		t.Errorf("failing poll: %v, %v", v, err)
	}
	b.SetFail("sacct", false)
	b.Sacct(fixtures, "after")
	clk.Add(time.Minute)
	if got := counts(); !reflect.DeepEqual(got, want) {
		t.Errorf("later window: %v, want %v", got, want)
	}
	runs := b.Runs("sacct")
	if len(runs) != 4 || !strings.Contains(runs[0], "-S 2026-11-21T12:00:00 -E 2026-11-21T12:10:00") ||
		!strings.Contains(runs[1], "-S 2026-11-21T12:00:00 -E 2026-11-21T12:15:00") ||
		!strings.Contains(runs[3], "-S 2026-11-21T12:05:00 -E 2026-11-21T12:17:00") {
		t.Errorf("sacct runs %q", runs)
	}
}
