// SPDX-License-Identifier: Apache-2.0

package cluster

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/pflag"

	"github.com/jobscope/jobscope/collector"
	"github.com/jobscope/jobscope/collector/provide"
	"github.com/jobscope/jobscope/collector/provide/slurm"
	"github.com/jobscope/jobscope/internal/testutil"
	"github.com/jobscope/jobscope/slurmcli"
	"github.com/jobscope/jobscope/slurmcli/slurmclitest"
)

// The cluster collectors are tested against fake Slurm commands: sh
// scripts that log their runs and print the real 22.05 captures in
// testdata/slurm/22.05, fail like a down slurmctld, or hang.

var slurmFixtures = filepath.Join("..", "..", "testdata", "slurm", "22.05")

// newSlurmFake is the fake Slurm commands printing the "when" capture,
// sacct included.
func newSlurmFake(t testing.TB, when string) *slurmclitest.Bin {
	t.Helper()
	f := slurmclitest.New(t)
	f.Fixtures(slurmFixtures, when)
	f.Sacct(slurmFixtures, when)
	return f
}

// slurmExporter builds the controller-mode exporter from command-line
// flags; sh may already hold a cache with a fake clock.
func slurmExporter(t testing.TB, sh *shared, args ...string) *collector.Exporter {
	t.Helper()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	set := collector.RegisterFlags(fs, factories(sh))
	provs := provide.NewSet(slurm.New())
	set.RegisterProviderFlags(provs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	names := set.Enabled(collector.ModeController)
	if err := provs.Start(&provide.Env{}, set.Needs(names)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = provs.Close() })
	cs := set.Build(&collector.Env{Providers: provs}, names, func(n string, err error) { t.Fatalf("build %s: %v", n, err) })
	exp := collector.NewExporter(cs, collector.Options{Problems: collector.NewProblems(nil), Info: collector.BuildInfo{Version: "test", Revision: "test", GoVersion: "go"}})
	t.Cleanup(exp.Close)
	return exp
}

func sharedWithClock(f *slurmclitest.Bin, format slurmcli.Format, clk *testutil.Clock) *shared {
	return &shared{cache: slurmcli.NewCache(slurmcli.CacheConfig{
		Runner:   &slurmcli.Runner{BinDir: f.Dir, Timeout: 30 * time.Second},
		Interval: time.Minute, MaxAge: 10 * time.Minute, Format: format, Now: clk.Now,
	})}
}

func slurmGather(ctx context.Context, exp *collector.Exporter) prometheus.Gatherer {
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(exp.Bind(ctx))
	return reg
}

// slurmExpect reports each series of want that got lacks or holds with
// another value; prefix starts each message.
func slurmExpect(t testing.TB, prefix string, got, want map[string]float64) {
	t.Helper()
	for k, w := range want {
		if v, ok := got[k]; !ok || v != w {
			t.Errorf("%s%s = %v (present %v), want %v", prefix, k, v, ok, w)
		}
	}
}

// Completed jobs that squeue --json still lists are not counted.
func TestSlurmJobsOnlyQueued(t *testing.T) {
	f := newSlurmFake(t, "after")
	exp := slurmExporter(t, &shared{}, "--slurm.bin-dir="+f.Dir)
	got := testutil.Samples(t, testutil.Exposition(t, slurmGather(context.Background(), exp)))
	var total float64
	for k, v := range got {
		if strings.HasPrefix(k, "slurm_queue_jobs{") {
			total += v
		}
	}
	if total != 2 || got[`slurm_queue_jobs{partition="debug",state="pending"}`] != 2 {
		t.Errorf("jobs in queue %v, want 2 pending (jobs 8 and 10)", total)
	}
	if got[`slurm_cluster_nodes{state="idle"}`] != 1 || got[`slurm_cluster_cpus{state="idle"}`] != 2 {
		t.Errorf("after: nodes %v", got)
	}
}

// Twenty concurrent scrapes run each command once per poll interval.
func TestSlurmConcurrentScrapes(t *testing.T) {
	f := newSlurmFake(t, "busy")
	exp := slurmExporter(t, &shared{}, "--slurm.bin-dir="+f.Dir, "--slurm.poll-interval=1h")
	var wg sync.WaitGroup
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			got := testutil.Samples(t, testutil.Exposition(t, slurmGather(ctx, exp)))
			if got[`slurm_cluster_nodes{state="draining"}`] != 1 || got[`slurm_license_configured{license="e2elic@flex"}`] != 4 {
				t.Errorf("a scrape missed the data: %v", got[`jobscope_slurm_up{source="nodes"}`])
			}
		}()
	}
	wg.Wait()
	for _, cmd := range []string{"squeue", "sinfo", "sshare", "sdiag", "sacct"} {
		if n := len(f.Runs(cmd)); n != 1 {
			t.Errorf("%s ran %d times for 20 concurrent scrapes, want 1", cmd, n)
		}
	}
	// scontrol lists reservations and licenses: 22.05 refuses --json, so
	// the first poll asks each once in JSON, then once in text.
	runs := map[string]int{}
	for _, r := range f.Runs("scontrol") {
		runs[r]++
	}
	if want := map[string]int{"show reservation --json": 1, "-o show reservation": 1, "show licenses --json": 1,
		"-o show licenses": 1}; !reflect.DeepEqual(runs, want) {
		t.Errorf("scontrol runs %v, want %v", runs, want)
	}
	expo := testutil.Exposition(t, slurmGather(context.Background(), exp))
	testutil.Promtool(t, expo) // the command counters too
	got := testutil.Samples(t, expo)
	if got[`jobscope_slurm_command_runs_total{command="squeue"}`] != 1 {
		t.Errorf("runs counter %v", got[`jobscope_slurm_command_runs_total{command="squeue"}`])
	}
}

// A hanging squeue is killed at --slurm.command-timeout; the scrape answers
// before its deadline with the error counted, the other collectors whole.
func TestSlurmHangingCommandKilled(t *testing.T) {
	f := newSlurmFake(t, "running")
	f.Hang("squeue")
	exp := slurmExporter(t, &shared{}, "--slurm.bin-dir="+f.Dir, "--slurm.command-timeout=500ms")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	got := testutil.Samples(t, testutil.Exposition(t, slurmGather(ctx, exp)))
	if ctx.Err() != nil {
		t.Fatal("the scrape outlived its deadline")
	}
	slurmExpect(t, "", got, map[string]float64{
		`jobscope_slurm_command_errors_total{cause="timeout",command="squeue"}`: 1,
		`jobscope_slurm_up{source="jobs"}`:                                      0,
		`jobscope_scrape_collector_success{collector="slurm_jobs"}`:             0,
		`jobscope_scrape_collector_success{collector="slurm_nodes"}`:            1,
		`jobscope_slurm_up{source="nodes"}`:                                     1,
		`slurm_cluster_nodes{state="allocated"}`:                                1,
	})
	if _, ok := got[`slurm_queue_jobs{partition="debug",state="running"}`]; ok {
		t.Error("job values served though squeue never answered")
	}
	if pids := f.HungPIDs("squeue"); !slurmclitest.WaitGone(pids) {
		t.Errorf("squeue processes %v survived the timeout", pids)
	}
}

// With a command timeout longer than the scrape's deadline, the scrape
// stops waiting and answers while the command still runs.
func TestSlurmScrapeDoesNotWaitPastDeadline(t *testing.T) {
	f := newSlurmFake(t, "running")
	f.Hang("sdiag")
	exp := slurmExporter(t, &shared{}, "--slurm.bin-dir="+f.Dir, "--slurm.command-timeout=1h")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	got := testutil.Samples(t, testutil.Exposition(t, slurmGather(ctx, exp)))
	pids := f.HungPIDs("sdiag")
	for _, p := range pids {
		if slurmclitest.Gone(p) {
			t.Fatalf("sdiag pid %d ended before the scrape answered", p)
		}
	}
	if got[`jobscope_scrape_collector_success{collector="slurm_scheduler"}`] != 0 ||
		got[`jobscope_scrape_collector_success{collector="slurm_jobs"}`] != 1 {
		t.Errorf("success: scheduler %v jobs %v", got[`jobscope_scrape_collector_success{collector="slurm_scheduler"}`],
			got[`jobscope_scrape_collector_success{collector="slurm_jobs"}`])
	}
}

// A failing command: last good values stay, marked stale by up 0, a growing
// age and success 0, and are dropped past --slurm.max-age.
func TestSlurmFailingCommandAges(t *testing.T) {
	f := newSlurmFake(t, "running")
	clk := testutil.NewClock(time.Unix(1795263000, 0))
	exp := slurmExporter(t, sharedWithClock(f, slurmcli.FormatAuto, clk))
	scrape := func() map[string]float64 {
		return testutil.Samples(t, testutil.Exposition(t, slurmGather(context.Background(), exp)))
	}
	scrape()
	f.SetFail("squeue", true)
	for i := 1; i <= 3; i++ {
		clk.Add(2 * time.Minute)
		got := scrape()
		slurmExpect(t, fmt.Sprintf("poll %d: ", i), got, map[string]float64{
			`jobscope_slurm_snapshot_age_seconds{source="jobs"}`:                 (time.Duration(i) * 2 * time.Minute).Seconds(),
			`jobscope_slurm_up{source="jobs"}`:                                   0,
			`jobscope_scrape_collector_success{collector="slurm_jobs"}`:          0,
			`slurm_queue_jobs{partition="debug",state="running"}`:                1,
			`jobscope_slurm_command_errors_total{cause="exit",command="squeue"}`: float64(i),
			`jobscope_slurm_snapshot_age_seconds{source="nodes"}`:                0,
			`jobscope_slurm_up{source="nodes"}`:                                  1,
		})
	}
	clk.Add(5 * time.Minute) // 11 minutes without a good squeue; max age 10
	got := scrape()
	if _, ok := got[`slurm_queue_jobs{partition="debug",state="running"}`]; ok {
		t.Error("values older than --slurm.max-age still served")
	}
	if got[`jobscope_slurm_snapshot_age_seconds{source="jobs"}`] != 660 {
		t.Errorf("age %v, want 660", got[`jobscope_slurm_snapshot_age_seconds{source="jobs"}`])
	}
}

func TestSlurmFlagsRejected(t *testing.T) {
	for _, args := range [][]string{
		{"--slurm.format=xml"},
		{"--slurm.poll-interval=0s"},
		{"--slurm.command-path=squeue=relative/squeue"},
		{"--slurm.command-path=rm=/bin/rm"},
	} {
		fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
		set := collector.RegisterFlags(fs, Factories())
		if err := fs.Parse(args); err != nil {
			continue // rejected as it was parsed
		}
		failed := 0
		set.Build(&collector.Env{}, set.Enabled(collector.ModeController), func(_ string, err error) {
			if errors.As(err, new(*collector.FlagError)) {
				failed++
			}
		})
		if failed == 0 {
			t.Errorf("%v accepted", args)
		}
	}
}

func TestSlurmOffInNodeMode(t *testing.T) {
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	set := collector.RegisterFlags(fs, Factories())
	if names := set.Enabled(collector.ModeNode); len(names) != 0 {
		t.Errorf("cluster collectors on in node mode: %v", names)
	}
	// Every cluster collector is on in controller mode, slurm_sacct too:
	// its queries ask slurmdbd only for what ended since the last poll.
	if names := set.Enabled(collector.ModeController); len(names) != 10 {
		t.Errorf("controller mode: %v", names)
	}
}
