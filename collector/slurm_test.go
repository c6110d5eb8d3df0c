package collector

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	promtest "github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/spf13/pflag"

	"github.com/jobscope/jobscope/internal/testutil"
	"github.com/jobscope/jobscope/slurmcli"
	"github.com/jobscope/jobscope/slurmcli/slurmclitest"
)

// The cluster collectors are tested against fake Slurm commands: sh
// scripts that log their runs and print the real 22.05 captures in
// testdata/slurm/22.05, fail like a down slurmctld, or hang.

var slurmFixtures = filepath.Join("..", "testdata", "slurm", "22.05")

// newSlurmFake is the fake Slurm commands printing the "when" capture,
// sacct included.
func newSlurmFake(t testing.TB, when string) *slurmclitest.Bin {
	t.Helper()
	f := slurmclitest.New(t)
	f.Fixtures(slurmFixtures, when)
	f.Sacct(slurmFixtures, when)
	return f
}

// slurmFactories are the cluster collectors alone, so these tests do not
// depend on the node collectors.
func slurmFactories() []Factory {
	return []Factory{SlurmJobsFactory(), SlurmNodesFactory(), SlurmFairshareFactory(), SlurmSchedulerFactory(),
		SlurmCommandsFactory(), SlurmSacctFactory()}
}

// slurmExporter builds the controller-mode exporter from command-line
// flags, over shared (which may already hold a cache with a fake clock).
func slurmExporter(t testing.TB, shared *Shared, args ...string) *Exporter {
	t.Helper()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	set := RegisterFlags(fs, slurmFactories())
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	names := set.Enabled(ModeController)
	env := &Env{Shared: shared}
	cs := set.Build(env, names, func(n string, err error) { t.Fatalf("build %s: %v", n, err) })
	t.Cleanup(func() {
		if o, err := shared.Get(SlurmCacheKey, func() (any, error) { return nil, os.ErrNotExist }); err == nil {
			o.(*slurmcli.Cache).Close()
		}
	})
	return NewExporter(cs, nil, NewProblems(nil), nil, BuildInfo{Version: "test", Revision: "test", GoVersion: "go"})
}

func slurmSharedWithClock(t testing.TB, f *slurmclitest.Bin, format slurmcli.Format, clk *slurmclitest.Clock) *Shared {
	shared := NewShared()
	_, err := shared.Get(SlurmCacheKey, func() (any, error) {
		return slurmcli.NewCache(slurmcli.CacheConfig{
			Runner:   &slurmcli.Runner{BinDir: f.Dir, Timeout: 30 * time.Second},
			Interval: time.Minute, MaxAge: 10 * time.Minute, Format: format, Now: clk.Now,
		}), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return shared
}

func slurmGather(ctx context.Context, exp *Exporter) prometheus.Gatherer {
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(exp.Bind(ctx))
	return reg
}

// slurmSeries maps `name{labels}` to its value from an exposition.
func slurmSeries(t testing.TB, expo []byte) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	sc := bufio.NewScanner(bytes.NewReader(expo))
	for sc.Scan() {
		l := sc.Text()
		if l == "" || l[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(l, ' ')
		v, err := strconv.ParseFloat(l[i+1:], 64)
		if err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		out[l[:i]] = v
	}
	return out
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

// slurmHandChecked are values read off the "running" capture by hand:
// squeue -r lists 11 jobs: running 2 (job 2 in debug, job 3 in batch),
// pending 9 (debug: 4, 6, 8, 9, 10; batch: 5 and the three tasks of array 7),
// matching sdiag's "Jobs pending: 9, Jobs running: 2". sinfo: one node vm in
// both partitions, allocated, CPUs A/I/O/T 2/0/0/2; scontrol: RealMemory
// 20489 MiB, AllocMem 856 MiB (256M job 2 + 600M job 3), FreeMem 22372 MiB,
// gpu 2 configured, 1 allocated (job 3's --gres=gpu:1).
var slurmHandChecked = map[string]float64{
	`slurm_queue_jobs{partition="debug",state="running"}`:                1,
	`slurm_queue_jobs{partition="batch",state="running"}`:                1,
	`slurm_queue_jobs{partition="debug",state="pending"}`:                5,
	`slurm_queue_jobs{partition="batch",state="pending"}`:                4,
	`slurm_queue_jobs_cpus{partition="batch",state="running"}`:           1,
	`slurm_queue_jobs_gpus{partition="batch",state="running"}`:           1,
	`slurm_queue_jobs_memory_bytes{partition="batch",state="running"}`:   600 << 20,
	`slurm_queue_user_jobs{state="pending",user="bob"}`:                  5,
	`slurm_queue_user_jobs{state="pending",user="alice"}`:                4,
	`slurm_queue_account_jobs{account="physics",state="pending"}`:        3,
	`slurm_queue_account_jobs{account="chemistry",state="pending"}`:      6,
	`slurm_queue_jobs_pending{partition="debug",reason="JobHeldUser"}`:   1,
	`slurm_queue_jobs_pending{partition="batch",reason="Priority"}`:      3,
	`slurm_cluster_nodes{state="allocated"}`:                             1,
	`slurm_cluster_partition_nodes{partition="debug",state="allocated"}`: 1,
	`slurm_cluster_partition_nodes{partition="batch",state="allocated"}`: 1,
	`slurm_cluster_cpus{state="allocated"}`:                              2,
	`slurm_cluster_cpus{state="idle"}`:                                   0,
	`slurm_cluster_cpus{state="other"}`:                                  0,
	`slurm_cluster_cpus_configured`:                                      2,
	`slurm_cluster_memory_real_bytes`:                                    20489 << 20,
	`slurm_cluster_memory_allocated_bytes`:                               856 << 20,
	`slurm_cluster_memory_free_bytes`:                                    22372 << 20,
	`slurm_cluster_gpus_configured`:                                      2,
	`slurm_cluster_gpus_allocated`:                                       1,
	`jobscope_slurm_up{source="jobs"}`:                                   1,
	`jobscope_slurm_snapshot_age_seconds{source="jobs"}`:                 0,
}

// TestSlurmGolden renders the whole cluster output for the "running"
// capture, from squeue/sinfo --json (auto on 22.05) and from the text forms.
func TestSlurmGolden(t *testing.T) {
	for _, c := range []struct {
		name   string
		format slurmcli.Format
	}{{"running", slurmcli.FormatAuto}, {"running-text", slurmcli.FormatText}} {
		t.Run(c.name, func(t *testing.T) {
			f := newSlurmFake(t, "running")
			// 12:10, just after the capture, in the zone sacct's times are read in.
			clk := slurmclitest.NewClock(time.Date(2026, 11, 21, 12, 10, 0, 0, time.Local))
			exp := slurmExporter(t, slurmSharedWithClock(t, f, c.format, clk), "--collector.slurm_commands=false",
				"--collector.slurm_sacct", "--slurm.sacct.since=2026-11-21T12:00:00")
			g := slurmGather(context.Background(), exp)
			expo := testutil.Exposition(t, g)
			testutil.Golden(t, filepath.Join("..", "testdata", "slurm", c.name+".golden"), expo)
			got := slurmSeries(t, expo)
			slurmExpect(t, "", got, slurmHandChecked)
			for _, name := range []string{"slurm_jobs", "slurm_nodes", "slurm_fairshare", "slurm_scheduler", "slurm_sacct"} {
				if got[`jobscope_scrape_collector_success{collector="`+name+`"}`] != 1 {
					t.Errorf("collector %s failed", name)
				}
			}
			lint, err := promtest.GatherAndLint(g)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range lint {
				t.Errorf("lint: %s: %s", p.Metric, p.Text)
			}
		})
	}
}

// Completed jobs that squeue --json still lists are not counted.
func TestSlurmJobsOnlyQueued(t *testing.T) {
	f := newSlurmFake(t, "after")
	exp := slurmExporter(t, NewShared(), "--slurm.bin-dir="+f.Dir)
	got := slurmSeries(t, testutil.Exposition(t, slurmGather(context.Background(), exp)))
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
	f := newSlurmFake(t, "running")
	exp := slurmExporter(t, NewShared(), "--slurm.bin-dir="+f.Dir, "--slurm.poll-interval=1h")
	var wg sync.WaitGroup
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			got := slurmSeries(t, testutil.Exposition(t, slurmGather(ctx, exp)))
			if got[`slurm_cluster_nodes{state="allocated"}`] != 1 {
				t.Errorf("a scrape missed the data: %v", got[`jobscope_slurm_up{source="nodes"}`])
			}
		}()
	}
	wg.Wait()
	for _, cmd := range []string{"squeue", "sinfo", "sshare", "sdiag"} {
		if n := len(f.Runs(cmd)); n != 1 {
			t.Errorf("%s ran %d times for 20 concurrent scrapes, want 1", cmd, n)
		}
	}
	if n := len(f.Runs("scontrol")); n != 0 {
		t.Errorf("scontrol ran %d times", n)
	}
	expo := testutil.Exposition(t, slurmGather(context.Background(), exp))
	testutil.Promtool(t, expo) // the command counters too
	got := slurmSeries(t, expo)
	if got[`jobscope_slurm_command_runs_total{command="squeue"}`] != 1 {
		t.Errorf("runs counter %v", got[`jobscope_slurm_command_runs_total{command="squeue"}`])
	}
}

// A hanging squeue is killed at --slurm.command-timeout; the scrape answers
// before its deadline with the error counted, the other collectors whole.
func TestSlurmHangingCommandKilled(t *testing.T) {
	f := newSlurmFake(t, "running")
	f.Hang("squeue")
	exp := slurmExporter(t, NewShared(), "--slurm.bin-dir="+f.Dir, "--slurm.command-timeout=500ms")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	got := slurmSeries(t, testutil.Exposition(t, slurmGather(ctx, exp)))
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
	exp := slurmExporter(t, NewShared(), "--slurm.bin-dir="+f.Dir, "--slurm.command-timeout=1h")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	got := slurmSeries(t, testutil.Exposition(t, slurmGather(ctx, exp)))
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
	clk := slurmclitest.NewClock(time.Unix(1795263000, 0))
	exp := slurmExporter(t, slurmSharedWithClock(t, f, slurmcli.FormatAuto, clk))
	scrape := func() map[string]float64 {
		return slurmSeries(t, testutil.Exposition(t, slurmGather(context.Background(), exp)))
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
		set := RegisterFlags(fs, slurmFactories())
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		failed := 0
		set.Build(&Env{Shared: NewShared()}, set.Enabled(ModeController), func(string, error) { failed++ })
		if failed == 0 {
			t.Errorf("%v accepted", args)
		}
	}
}

func TestSlurmOffInNodeMode(t *testing.T) {
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	set := RegisterFlags(fs, slurmFactories())
	if names := set.Enabled(ModeNode); len(names) != 0 {
		t.Errorf("cluster collectors on in node mode: %v", names)
	}
	// slurm_sacct is opt-in: its queries reach slurmdbd.
	if names := set.Enabled(ModeController); len(names) != 5 {
		t.Errorf("controller mode: %v", names)
	}
}
