// SPDX-License-Identifier: Apache-2.0

package cluster

import (
	"context"
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
