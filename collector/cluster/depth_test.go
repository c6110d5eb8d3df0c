// SPDX-License-Identifier: Apache-2.0

package cluster

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jobscope/jobscope/internal/testutil"
	"github.com/jobscope/jobscope/slurmcli"
)

// busyClock is just before the busy capture's jobs were submitted.
func busyClock(t *testing.T) *testutil.Clock {
	v, err := time.ParseInLocation("2006-01-02T15:04:05", "2026-11-25T00:12:00", time.Local)
	if err != nil {
		t.Fatal(err)
	}
	return testutil.NewClock(v)
}

// A squeue that hangs after a good poll: the scrape answers in time with
// the last snapshot, marked stale (up 0, its age), every family that reads
// it still there, and the queue tracker not fed the old poll twice.
func TestSlurmHungCommandServesLastSnapshot(t *testing.T) {
	f := newSlurmFake(t, "busy")
	clk := busyClock(t)
	exp := slurmExporter(t, sharedWithClock(f, slurmcli.FormatAuto, clk), "--collector.slurm_sacct.since=2026-11-25T00:00:00")
	clk.Add(96 * time.Second)
	first := testutil.Samples(t, testutil.Exposition(t, slurmGather(context.Background(), exp)))
	f.Hang("squeue")
	clk.Add(2 * time.Minute)
	// The scrape waits for the hung squeue until this deadline: long enough
	// for the other commands (fake scripts, a process each) to answer on a
	// loaded machine, where 3 s once was not.
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
	defer cancel()
	got := testutil.Samples(t, testutil.Exposition(t, slurmGather(ctx, exp)))
	f.HungPIDs("squeue")
	if ctx.Err() != nil {
		t.Fatal("the scrape outlived its deadline")
	}
	slurmExpect(t, "stale: ", got, map[string]float64{
		`jobscope_slurm_up{source="jobs"}`:                                       0,
		`jobscope_slurm_snapshot_age_seconds{source="jobs"}`:                     120,
		`jobscope_scrape_collector_success{collector="slurm_jobs"}`:              0,
		`jobscope_slurm_up{source="nodes"}`:                                      1,
		`slurm_queue_jobs{partition="batch",state="pending"}`:                    4,
		`slurm_queue_pending_reasons{reason="JobHeldUser"}`:                      5,
		`slurm_queue_pending_wait_seconds_sum{partition="batch"}`:                4 * (14 + 120),
		`slurm_queue_jobs_submitted_total`:                                       first[`slurm_queue_jobs_submitted_total`],
		`slurm_queue_started_wait_seconds_count{partition="debug",qos="normal"}`: 5,
		`slurm_cluster_node_info{features="",node="vm",partitions="batch,debug",reason="e2e: disk replaced, burn-in",state="draining"}`: 1,
	})
}

// Twenty concurrent scrapes of one poll feed the queue tracker once.
func TestSlurmQueueWaitOncePerPoll(t *testing.T) {
	f := newSlurmFake(t, "busy")
	clk := busyClock(t)
	exp := slurmExporter(t, sharedWithClock(f, slurmcli.FormatAuto, clk), "--collector.slurm_sacct.since=2026-11-25T00:00:00")
	clk.Add(96 * time.Second)
	var wg sync.WaitGroup
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			testutil.Exposition(t, slurmGather(context.Background(), exp))
		}()
	}
	wg.Wait()
	clk.Add(time.Minute) // a second poll of the same queue adds nothing
	got := testutil.Samples(t, testutil.Exposition(t, slurmGather(context.Background(), exp)))
	slurmExpect(t, "", got, map[string]float64{
		`slurm_queue_started_wait_seconds_count{partition="debug",qos="normal"}`: 5,
		`slurm_queue_started_wait_seconds_count{partition="batch",qos="normal"}`: 2,
		`slurm_queue_jobs_submitted_total`:                                       13,
	})
	if n := len(f.Runs("squeue")); n != 2 {
		t.Errorf("squeue ran %d times over two polls", n)
	}
}

// --collector.slurm_node=false drops the per-node family, nothing else.
func TestSlurmNodeFamilyOff(t *testing.T) {
	f := newSlurmFake(t, "busy")
	exp := slurmExporter(t, &shared{}, "--slurm.bin-dir="+f.Dir, "--collector.slurm_node=false")
	expo := string(testutil.Exposition(t, slurmGather(context.Background(), exp)))
	if strings.Contains(expo, "slurm_cluster_node_info") || strings.Contains(expo, "slurm_cluster_node_cpus_allocated") {
		t.Error("per-node series with --collector.slurm_node=false")
	}
	if !strings.Contains(expo, `slurm_cluster_nodes{state="draining"} 1`) {
		t.Error("cluster node counts lost with the per-node family")
	}
}

// A reason an admin typed with control characters and at length is cut to
// a bounded, printable label; a node listed twice gives one series.
func TestSlurmNodeReasonBounded(t *testing.T) {
	f := newSlurmFake(t, "busy")
	long := `disk\u001b[31m replaced\t\tand ` + strings.Repeat("very ", 40) + `long`
	f.Script("sinfo", `cat <<'EOF'
{"errors":[],"nodes":[{"name":"n1","state":"idle","state_flags":["DRAIN"],"partitions":["p"],"cpus":4,"reason":"`+long+`","features":"ib,gpu,ib"},
{"name":"n1","state":"idle","state_flags":["DRAIN"],"partitions":["p"],"cpus":4,"reason":"x"}]}
EOF`)
	exp := slurmExporter(t, &shared{}, "--slurm.bin-dir="+f.Dir)
	got := testutil.Samples(t, testutil.Exposition(t, slurmGather(context.Background(), exp)))
	var info []string
	for k := range got {
		if strings.HasPrefix(k, "slurm_cluster_node_info{") {
			info = append(info, k)
		}
	}
	want := `slurm_cluster_node_info{features="gpu,ib",node="n1",partitions="p",reason="disk[31m replaced and very very very very very very very very very very very…",state="drained"}`
	if len(info) != 1 || info[0] != want {
		t.Errorf("node info %q\nwant %q", info, want)
	}
}
