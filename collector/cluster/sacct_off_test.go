// SPDX-License-Identifier: Apache-2.0

package cluster

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/jobscope/jobscope/internal/testutil"
	"github.com/jobscope/jobscope/slurmcli"
)

// TestSacctAccountingDisabled is the regression test of the VM finding F10:
// on a cluster without slurmdbd (Debian 12's Slurm 22.05 in VM A), sacct,
// which controller mode runs by default, answers "Slurm accounting storage
// is disabled" with exit status 1 at every poll. That made a source that
// failed forever: jobscope_slurm_up{source="sacct"} 0, the collector's
// success 0, a warning, and contrib's Slurm-commands-failing alert. It is
// now a source the cluster lacks: logged once, sacct not run again, no
// status series, the collector successful.
func TestSacctAccountingDisabled(t *testing.T) {
	f := newSlurmFake(t, "running")
	// What sacct 22.05 printed in VM A (stderr, exit status 1).
	f.Script("sacct", "echo 'sacct: error: Slurm accounting storage is disabled' >&2; exit 1")
	clk := testutil.NewClock(time.Unix(1795263000, 0))
	var logs bytes.Buffer
	sh := sharedWithClock(f, slurmcli.FormatAuto, clk)
	sh.cache = slurmcli.NewCache(slurmcli.CacheConfig{
		Runner:   &slurmcli.Runner{BinDir: f.Dir, Timeout: 30 * time.Second},
		Interval: time.Minute, MaxAge: 10 * time.Minute, Format: slurmcli.FormatAuto, Now: clk.Now,
		Logger: slog.New(slog.NewTextHandler(&logs, nil)),
	})
	exp := slurmExporter(t, sh)
	for i := range 4 {
		got := testutil.Samples(t, testutil.Exposition(t, slurmGather(context.Background(), exp)))
		slurmExpect(t, "", got, map[string]float64{
			`jobscope_scrape_collector_success{collector="slurm_sacct"}`:      1,
			`jobscope_scrape_collector_success{collector="slurm_queue_wait"}`: 1,
			`jobscope_slurm_up{source="jobs"}`:                                1,
		})
		for _, absent := range []string{`jobscope_slurm_up{source="sacct"}`, `jobscope_slurm_snapshot_age_seconds{source="sacct"}`} {
			if _, ok := got[absent]; ok {
				t.Errorf("scrape %d: %s present: a cluster without accounting is not a failing source", i, absent)
			}
		}
		clk.Add(2 * time.Minute)
	}
	if n := len(f.Runs("sacct")); n != 1 {
		t.Errorf("sacct ran %d times; after it said accounting is off it should not run again", n)
	}
	var lines []string
	for _, l := range strings.Split(logs.String(), "\n") {
		if strings.Contains(l, "source=sacct") {
			lines = append(lines, l)
		}
	}
	if len(lines) != 1 || !strings.Contains(lines[0], "level=INFO") || !strings.Contains(lines[0], "accounting storage is disabled") {
		t.Errorf("want one INFO line about disabled accounting for source=sacct, got %q", lines)
	}
}
