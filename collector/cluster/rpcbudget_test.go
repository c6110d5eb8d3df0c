// SPDX-License-Identifier: Apache-2.0

package cluster

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/jobscope/jobscope/collector"
	"github.com/jobscope/jobscope/collector/provide"
	"github.com/jobscope/jobscope/collector/provide/slurm"
	"github.com/jobscope/jobscope/internal/testutil"
	"github.com/jobscope/jobscope/slurmcli/slurmclitest"
)

// rpcBudget is what controller mode at its default flags asks of Slurm in
// one hour, scraped every 15 s: runs per command (scontrol by what it
// shows) and the RPCs each run costs slurmctld (squeue: job info; sinfo:
// node and partition info; sshare: share info; sdiag: stats info; scontrol
// show reservation and licenses: one each; sacct asks slurmdbd, not
// slurmctld). Measured per message type with sdiag in VM C (Slurm 26.05,
// test/vm/guest/rpcload.sh). A new command, a command run more often or a
// shorter default interval changes this table: change it on purpose, and
// the figures in docs/controller.md with it.
var rpcBudget = []struct {
	command   string
	runs      int
	rpcPerRun int
}{
	{"squeue", 120, 1},              // --slurm.poll-interval 30s
	{"sinfo", 120, 2},               // --slurm.poll-interval
	{"sdiag", 120, 1},               // --slurm.poll-interval
	{"sacct", 120, 0},               // --slurm.poll-interval, to slurmdbd
	{"sshare", 12, 1},               // --slurm.slow-poll-interval 5m
	{"scontrol reservation", 12, 1}, // --slurm.slow-poll-interval
	{"scontrol licenses", 12, 1},    // --slurm.slow-poll-interval
}

// rpcBudgetPerHour is the table's total of slurmctld RPCs: 516 an hour,
// 8.6 a minute (all seven commands at the poll interval were 14 a minute).
const rpcBudgetPerHour = 516

// TestControllerRPCBudget drives controller mode at its default flags
// through a simulated hour (a fake clock, fake Slurm commands that log
// their runs, a scrape every 15 s) and holds the runs of each command to
// rpcBudget: the CI guard against a change that adds load on slurmctld.
func TestControllerRPCBudget(t *testing.T) {
	f := slurmclitest.New(t)
	dir := filepath.Join("..", "..", "testdata", "slurm", "26.05")
	f.Fixtures(dir, "running")
	f.Sacct(dir, "running")
	clk := testutil.NewClock(time.Now())

	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	set := collector.RegisterFlags(fs, factories(&shared{}))
	provs := provide.NewSet(slurm.New())
	set.RegisterProviderFlags(provs)
	// Only where the commands are: every interval is the default.
	if err := fs.Parse([]string{"--slurm.bin-dir=" + f.Dir}); err != nil {
		t.Fatal(err)
	}
	names := set.Enabled(collector.ModeController)
	if err := provs.Start(&provide.Env{Now: clk.Now}, set.Needs(names)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = provs.Close() })
	cs := set.Build(&collector.Env{Providers: provs}, names, func(n string, err error) { t.Fatalf("build %s: %v", n, err) })
	exp := collector.NewExporter(cs, collector.Options{Problems: collector.NewProblems(nil), Info: collector.BuildInfo{Version: "test", Revision: "test", GoVersion: "go"}})
	t.Cleanup(exp.Close)

	const scrapeEvery = 15 * time.Second
	for range int(time.Hour / scrapeEvery) {
		got := testutil.Samples(t, testutil.Exposition(t, slurmGather(context.Background(), exp)))
		if got[`jobscope_slurm_up{source="shares"}`] != 1 || got[`jobscope_slurm_up{source="jobs"}`] != 1 {
			t.Fatalf("a source is down at %s: shares %v, jobs %v", clk.Now().Format(time.TimeOnly),
				got[`jobscope_slurm_up{source="shares"}`], got[`jobscope_slurm_up{source="jobs"}`])
		}
		clk.Add(scrapeEvery)
	}

	runs := map[string]int{}
	for _, cmd := range []string{"squeue", "sinfo", "sdiag", "sacct", "sshare", "scontrol"} {
		for _, args := range f.Runs(cmd) {
			key := cmd
			if cmd == "scontrol" {
				key += " " + strings.Fields(strings.TrimPrefix(args, "show "))[0]
			}
			runs[key]++
		}
	}
	rpcs := 0
	for _, b := range rpcBudget {
		if runs[b.command] != b.runs {
			t.Errorf("%s ran %d times in an hour at the defaults, want %d", b.command, runs[b.command], b.runs)
		}
		rpcs += runs[b.command] * b.rpcPerRun
		delete(runs, b.command)
	}
	for cmd, n := range runs {
		t.Errorf("%s ran %d times in an hour: a command not in the budget", cmd, n)
	}
	if rpcs != rpcBudgetPerHour {
		t.Errorf("%d slurmctld RPCs in an hour, want %d", rpcs, rpcBudgetPerHour)
	}
}

// TestSiteRPCTableMatchesBudget holds the table the site's real-slurmctld
// check asserts with (test/site/guest/rpcbudget.sh, RPCB_TABLE: command,
// source, interval, message types) to rpcBudget: the same commands, the
// same RPCs a run, the slow ones those run at the slow interval. A change
// to one table without the other fails here, not an hour into CI.
func TestSiteRPCTableMatchesBudget(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "test", "site", "guest", "rpcbudget.sh"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "\nRPCB_TABLE='")
	table, _, ok2 := strings.Cut(rest, "'")
	if !ok || !ok2 {
		t.Fatal("no RPCB_TABLE='...' in rpcbudget.sh")
	}
	// scontrol's rows are named by what it shows, as in rpcBudget.
	shows := map[string]string{"reservations": "reservation", "licenses": "licenses"}
	site := map[string][2]int{} // command: RPCs a run, runs an hour at the defaults
	for line := range strings.Lines(table) {
		f := strings.Fields(line)
		if len(f) != 4 {
			t.Fatalf("RPCB_TABLE line %q: want command, source, interval, types", line)
		}
		cmd := f[0]
		if cmd == "scontrol" {
			cmd += " " + shows[f[1]]
		}
		rpcs := 0
		if f[3] != "-" {
			rpcs = len(strings.Split(f[3], ","))
		}
		runs := map[string]int{"fast": 120, "slow": 12}[f[2]]
		site[cmd] = [2]int{rpcs, runs}
	}
	for _, b := range rpcBudget {
		got, ok := site[b.command]
		switch {
		case !ok:
			t.Errorf("%s: in rpcBudget, not in rpcbudget.sh", b.command)
		case got != [2]int{b.rpcPerRun, b.runs}:
			t.Errorf("%s: rpcbudget.sh has %d RPCs a run at %d runs an hour, rpcBudget %d at %d", b.command, got[0], got[1], b.rpcPerRun, b.runs)
		}
		delete(site, b.command)
	}
	for cmd := range site {
		t.Errorf("%s: in rpcbudget.sh, not in rpcBudget", cmd)
	}
}
