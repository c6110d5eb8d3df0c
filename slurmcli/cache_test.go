// SPDX-License-Identifier: Apache-2.0

package slurmcli

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jobscope/jobscope/internal/poll"
	"github.com/jobscope/jobscope/internal/testutil"
	"github.com/jobscope/jobscope/slurmcli/slurmclitest"
)

// newFakeClock is a settable clock for the cache's poll interval and ages.
func newFakeClock() *testutil.Clock { return testutil.NewClock(time.Unix(1795263000, 0)) }

// serve is what a cluster collector does with a source: get, then serve.
func serve[T any](ctx context.Context, c *Cache, p *poll.Poller[T]) (T, time.Duration, bool, error) {
	r := p.Get(ctx)
	v, ok, err := Serve(r, c.MaxAge())
	return v, r.Age(), ok, err
}

func newTestCache(t *testing.T, b *slurmclitest.Bin, clk *testutil.Clock, format Format, timeout time.Duration, srcs ...Source) *Cache {
	c := NewCache(CacheConfig{
		Runner:   &Runner{BinDir: b.Dir, Timeout: timeout},
		Interval: time.Minute, MaxAge: 10 * time.Minute, Format: format, Now: clk.Now,
	})
	t.Cleanup(c.Close)
	for _, s := range srcs {
		c.Want(s)
	}
	return c
}

// Many concurrent scrapes share one run of each command per interval.
func TestCacheSingleFlight(t *testing.T) {
	b := slurmclitest.New(t)
	b.Fixtures(fixtures, "running")
	clk := newFakeClock()
	c := newTestCache(t, b, clk, FormatAuto, 30*time.Second, Sources...)
	scrape := func() {
		var wg sync.WaitGroup
		for range 20 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c.Refresh(context.Background())
				if _, _, ok, err := serve(context.Background(), c, c.Jobs); !ok || err != nil {
					t.Errorf("jobs: ok %v err %v", ok, err)
				}
			}()
		}
		wg.Wait()
	}
	scrape()
	scrape() // same interval: served from the cache
	for _, cmd := range []string{"squeue", "sinfo", "sshare", "sdiag"} {
		if n := len(b.Runs(cmd)); n != 1 {
			t.Errorf("%s ran %d times for 40 scrapes in one interval, want 1", cmd, n)
		}
	}
	clk.Add(time.Minute)
	scrape()
	for _, cmd := range []string{"squeue", "sinfo", "sshare", "sdiag"} {
		if n := len(b.Runs(cmd)); n != 2 {
			t.Errorf("%s ran %d times over two intervals, want 2", cmd, n)
		}
	}
	for _, run := range b.Runs("scontrol") {
		if strings.Contains(run, "node") {
			t.Errorf("scontrol ran %q in JSON mode", run)
		}
	}
}

// A failing command leaves the last good value served with a growing age,
// never presented as fresh, and dropped past the maximum age.
func TestCacheServesLastGoodWithAge(t *testing.T) {
	b := slurmclitest.New(t)
	b.Fixtures(fixtures, "running")
	clk := newFakeClock()
	c := newTestCache(t, b, clk, FormatAuto, 30*time.Second, SourceJobs)
	if _, age, ok, err := serve(context.Background(), c, c.Jobs); !ok || err != nil || age != 0 {
		t.Fatalf("first: age %v ok %v err %v", age, ok, err)
	}
	b.SetFail("squeue", true)
	for i := 1; i <= 3; i++ {
		clk.Add(time.Minute)
		v, age, ok, err := serve(context.Background(), c, c.Jobs)
		if !ok || v == nil {
			t.Fatalf("poll %d: last good value dropped before the maximum age", i)
		}
		if err == nil || !strings.Contains(err.Error(), "Unable to contact") {
			t.Errorf("poll %d: err %v, want slurmctld's message", i, err)
		}
		if age != time.Duration(i)*time.Minute {
			t.Errorf("poll %d: age %v, want %v", i, age, time.Duration(i)*time.Minute)
		}
	}
	clk.Add(8 * time.Minute) // 11 minutes old now, max age 10
	if _, _, ok, err := serve(context.Background(), c, c.Jobs); ok || err == nil {
		t.Errorf("value older than the maximum age still served (err %v)", err)
	}
	b.SetFail("squeue", false)
	clk.Add(time.Minute)
	if _, age, ok, err := serve(context.Background(), c, c.Jobs); !ok || err != nil || age != 0 {
		t.Errorf("after recovery: age %v ok %v err %v", age, ok, err)
	}
	_, stats := c.Runner().Stats().Snapshot()
	if st := stats["squeue"]; st.Runs != 6 || st.Errors[CauseExit] != 4 {
		t.Errorf("squeue stats %+v, want 6 runs, 4 exit errors", st)
	}
}

// In auto mode a squeue without --json is asked once, then only in text.
func TestCacheAutoFallsBackToText(t *testing.T) {
	b := slurmclitest.New(t)
	b.Fixtures(fixtures, "busy")
	abs := func(n string) string { return "'" + fixtures + "/" + n + "'" }
	b.Script("squeue", `case "$1" in --json) echo "squeue: unrecognized option '--json'" >&2; exit 1;; *) `+slurmclitest.FindSep+`; `+slurmclitest.ToSep(len(squeueTextFields))+` `+abs("squeue-O-busy.txt")+`;; esac`)
	clk := newFakeClock()
	c := newTestCache(t, b, clk, FormatAuto, 30*time.Second, SourceJobs)
	for range 2 {
		v, _, ok, err := serve(context.Background(), c, c.Jobs)
		if !ok || err != nil || len(v) != 11 {
			t.Fatalf("ok %v err %v jobs %d", ok, err, len(v))
		}
		clk.Add(time.Minute)
	}
	runs := b.Runs("squeue")
	if len(runs) != 3 || runs[0] != "--json --all" || strings.Contains(runs[1]+runs[2], "--json") {
		t.Errorf("squeue runs %q, want one --json then text only", runs)
	}
}

// A scrape waits for a hanging command only until its own deadline, then
// gets what the cache has; the command is killed later, at its timeout.
func TestCacheScrapeDeadline(t *testing.T) {
	b := slurmclitest.New(t)
	b.Fixtures(fixtures, "running")
	b.Hang("sdiag")
	clk := newFakeClock()
	c := newTestCache(t, b, clk, FormatAuto, time.Hour, SourceJobs, SourceDiag)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c.Refresh(ctx)
	pids := b.HungPIDs("sdiag")
	for _, p := range pids {
		if slurmclitest.Gone(p) {
			t.Fatalf("sdiag (pid %d) ended before the scrape gave up: test proves nothing", p)
		}
	}
	if _, _, ok, _ := serve(ctx, c, c.Diag); ok {
		t.Error("hanging sdiag produced a value")
	}
	// squeue finished while sdiag hung: its result was published on its own.
	if _, _, ok, err := serve(ctx, c, c.Jobs); !ok || err != nil {
		t.Errorf("jobs held back by the hanging sdiag: ok %v err %v", ok, err)
	}
	c.Close() // the exporter shutting down kills what still runs
	if !slurmclitest.WaitGone(pids) {
		t.Errorf("sdiag processes %v survived Close", pids)
	}
}

// An sinfo whose JSON has neither list jobscope reads (a layout of a
// future version): auto mode moves to the text form (scontrol show node -o)
// for good.
func TestCacheAutoFallsBackOnJSONShape(t *testing.T) {
	b := slurmclitest.New(t)
	b.Fixtures(fixtures, "running")
	b.Script("sinfo", `echo '{"node_groups":[],"errors":[],"warnings":[]}'`)
	clk := newFakeClock()
	c := newTestCache(t, b, clk, FormatAuto, 30*time.Second, SourceNodes)
	for range 2 {
		v, _, ok, err := serve(context.Background(), c, c.Nodes)
		if !ok || err != nil || len(v) != 1 {
			t.Fatalf("ok %v err %v", ok, err)
		}
		clk.Add(time.Minute)
	}
	if s, sc := len(b.Runs("sinfo")), len(b.Runs("scontrol")); s != 1 || sc != 2 {
		t.Errorf("sinfo ran %d times, scontrol %d; want 1 and 2", s, sc)
	}
	// With --slurm.format=json there is no fallback: the error shows.
	c2 := newTestCache(t, b, clk, FormatJSON, 30*time.Second, SourceNodes)
	if _, _, ok, err := serve(context.Background(), c2, c2.Nodes); ok || err == nil {
		t.Errorf("json mode: ok %v err %v", ok, err)
	}
}

// When the refresh of a source is still running as the scrape must answer,
// the previous value is served but not as fresh.
func TestCacheOverdueRefreshNotFresh(t *testing.T) {
	b := slurmclitest.New(t)
	b.Fixtures(fixtures, "running")
	clk := newFakeClock()
	c := newTestCache(t, b, clk, FormatAuto, time.Hour, SourceDiag)
	if r := c.Diag.Get(context.Background()); !r.Fresh() {
		t.Fatalf("first poll not fresh: %+v", r)
	}
	b.Hang("sdiag")
	clk.Add(2 * time.Minute)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	r := c.Diag.Get(ctx)
	b.HungPIDs("sdiag")
	v, ok, err := Serve(r, c.MaxAge())
	if !ok || v == nil || r.Age() != 2*time.Minute {
		t.Errorf("previous value not served: ok %v age %v", ok, r.Age())
	}
	if err == nil || !strings.Contains(err.Error(), "still running") || r.Fresh() {
		t.Errorf("overdue refresh presented as fresh: err %v", err)
	}
}

// Controller mode in text: a job name that broke a record, or a second
// record of a job, costs those records only. The rest is served, the
// records left out are counted as cause=record and logged once.
func TestCacheTextLeavesOutBadRecords(t *testing.T) {
	b := slurmclitest.New(t)
	b.Fixtures(fixtures, "busy")
	capture := fixtures + "/squeue-O-busy.txt"
	// The capture, then job 9 again and a line with too few fields.
	b.Script("squeue", slurmclitest.FindSep+"\n{ cat '"+capture+"'; head -1 '"+capture+"'; echo 'x|y'; } | "+
		slurmclitest.ToSep(len(squeueTextFields)))
	clk := newFakeClock()
	var logs bytes.Buffer
	c := NewCache(CacheConfig{Runner: &Runner{BinDir: b.Dir, Logger: slog.New(slog.NewTextHandler(&logs, nil))},
		Interval: time.Minute, Format: FormatText, Now: clk.Now})
	t.Cleanup(c.Close)
	c.Want(SourceJobs)
	for range 2 {
		v, _, ok, err := serve(context.Background(), c, c.Jobs)
		if !ok || err != nil || len(v) != 10 {
			t.Fatalf("ok %v err %v jobs %d, want the 11 of the capture less job 9", ok, err, len(v))
		}
		for _, j := range v {
			if j.ID == "9" {
				t.Errorf("job 9 printed twice is served: %+v", j)
			}
		}
		clk.Add(time.Minute)
	}
	_, stats := c.Runner().Stats().Snapshot()
	if st := stats["squeue"]; st.Errors[CauseRecord] != 6 || st.Errors[CauseParse] != 0 {
		t.Errorf("squeue stats %+v, want 6 records left out over 2 runs", st)
	}
	if n := strings.Count(logs.String(), "printed records that cannot be read"); n != 1 {
		t.Errorf("%d log lines, want 1:\n%s", n, logs.String())
	}
}
