// SPDX-License-Identifier: Apache-2.0

package cluster

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	promtest "github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/jobscope/jobscope/internal/testutil"
	"github.com/jobscope/jobscope/slurmcli"
	"github.com/jobscope/jobscope/slurmcli/slurmclitest"
)

// slurmRunning2205 are values read off the 22.05 "running" capture by hand:
// squeue -r lists 11 jobs: running 2 (job 2 in debug, job 3 in batch),
// pending 9 (debug: 4, 6, 8, 9, 10; batch: 5 and the three tasks of array 7),
// matching sdiag's "Jobs pending: 9, Jobs running: 2". sinfo: one node vm in
// both partitions, allocated, CPUs A/I/O/T 2/0/0/2; scontrol: RealMemory
// 20489 MiB, AllocMem 856 MiB (256M job 2 + 600M job 3), FreeMem 22372 MiB,
// gpu 2 configured, 1 allocated (job 3's --gres=gpu:1).
var slurmRunning2205 = map[string]float64{
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
	`slurm_cluster_node_state_cpus{state="allocated"}`:                   2,
	`slurm_cluster_node_cpu_load{node="vm"}`:                             1.94,
	`jobscope_slurm_up{source="jobs"}`:                                   1,
	`jobscope_slurm_snapshot_age_seconds{source="jobs"}`:                 0,
}

// slurmBusy2205 are read off the 22.05 "busy" capture (taken by the e2e at
// 00:13:36, node vm draining), the same in JSON and text: 5 running jobs
// (debug 2, 4, 6; batch 3, 5), pending in batch job 9 (on the drain:
// "Resources") and array 11's three held tasks, in debug held job 7
// (100M) and job 10 without --mem (Slurm's default: the node's 24105 MiB).
// Submitted since 00:12:00: jobs 1 to 10 and the array's 3 tasks; 1 and 8
// ended before the capture (JSON still lists them, text has them from sacct).
var slurmBusy2205 = map[string]float64{
	`slurm_queue_jobs{partition="debug",state="running"}`:                           3,
	`slurm_queue_jobs{partition="batch",state="running"}`:                           2,
	`slurm_queue_jobs{partition="batch",state="pending"}`:                           4,
	`slurm_queue_jobs{partition="debug",state="pending"}`:                           2,
	`slurm_queue_jobs_memory_bytes{partition="debug",state="pending"}`:              (100 + 24105) << 20,
	`slurm_queue_jobs_pending{partition="batch",reason="Resources"}`:                1,
	`slurm_queue_jobs_pending{partition="batch",reason="JobHeldUser"}`:              3,
	`slurm_queue_jobs_pending{partition="debug",reason="JobHeldUser"}`:              2,
	`slurm_queue_pending_reasons{reason="JobHeldUser"}`:                             5,
	`slurm_queue_pending_reasons{reason="Resources"}`:                               1,
	`slurm_queue_pending_wait_seconds_count{partition="batch"}`:                     4,
	`slurm_queue_pending_wait_seconds_sum{partition="batch"}`:                       4 * 14,
	`slurm_queue_pending_wait_seconds_bucket{partition="debug",le="60"}`:            2,
	`slurm_queue_pending_wait_seconds_sum{partition="debug"}`:                       14 + 48,
	`slurm_queue_jobs_submitted_total`:                                              13,
	`slurm_cluster_nodes{state="draining"}`:                                         1,
	`slurm_cluster_node_state_cpus{state="draining"}`:                               2,
	`slurm_cluster_node_cpus_allocated{node="vm"}`:                                  2,
	`slurm_cluster_node_memory_real_bytes{node="vm"}`:                               24105 << 20,
	`slurm_cluster_node_memory_allocated_bytes{node="vm"}`:                          1300 << 20,
	`slurm_cluster_node_gpus_allocated{node="vm"}`:                                  1,
	`slurm_cluster_node_cpu_load{node="vm"}`:                                        7.11,
	`slurm_reservation_start_timestamp_seconds{reservation="e2e_maint"}`:            1795567388,
	`slurm_reservation_cpus{reservation="e2e_maint"}`:                               2,
	`slurm_reservation_cpus_allocated{reservation="e2e_maint"}`:                     2,
	`slurm_reservation_cpus_idle{reservation="e2e_maint"}`:                          0,
	`slurm_license_configured{license="e2elic@flex"}`:                               4,
	`slurm_license_used{license="e2elic@flex"}`:                                     0,
	`slurm_jobs_ended_total{account="physics",partition="debug",state="completed"}`: 1,
	`slurm_jobs_ended_total{account="root",partition="debug",state="completed"}`:    1,
	`slurm_cluster_partition_cpu_load{partition="batch"}`:                           7.11,
	`slurm_cluster_partition_weight{partition="debug"}`:                             1,
	`slurm_reservation_info{accounts="",flags="maint,ignore_jobs,spec_nodes,all_nodes",nodes="vm",partition="",reservation="e2e_maint",state="inactive",users="root"}`: 1,
	`slurm_cluster_node_info{features="",node="vm",partitions="batch,debug",reason="e2e: disk replaced, burn-in",state="draining"}`:                                    1,
}

// slurmBusy2205JSON: JSON lists ended jobs too, so the waits of jobs 1 and 8
// (started and ended between two polls) count; text lists the queue only.
var slurmBusy2205JSON = map[string]float64{
	`slurm_queue_started_wait_seconds_count{partition="debug",qos="normal"}`: 5,
}

var slurmBusy2205Text = map[string]float64{
	`slurm_queue_started_wait_seconds_count{partition="debug",qos="normal"}`: 3,
}

// slurm2411 are read off the 24.11 "running" capture (trixie VM, 23:39):
// node1 allocated, node2 drained with its reason and reserved for alice;
// maint_window (inactive, both nodes) has node1's 4 CPUs allocated; job 12
// holds both fluent licenses; ended by then: 1, 2 completed, 3 failed,
// 4 out of memory, 19 cancelled.
var slurm2411 = map[string]float64{
	`slurm_cluster_node_info{features="",node="node2",partitions="batch",reason="disk replaced, burn-in pending",state="drained"}`: 1,
	`slurm_cluster_node_info{features="",node="node1",partitions="batch,debug",reason="",state="allocated"}`:                       1,
	`slurm_cluster_node_cpu_load{node="node2"}`: 1.79,
	`slurm_reservation_info{accounts="",flags="ignore_jobs,spec_nodes",nodes="node2",partition="",reservation="node2_alice",state="active",users="alice"}`:                       1,
	`slurm_reservation_info{accounts="",flags="maint,ignore_jobs,spec_nodes,all_nodes",nodes="node[1-2]",partition="",reservation="maint_window",state="inactive",users="root"}`: 1,
	`slurm_reservation_cpus_allocated{reservation="maint_window"}`: 4,
	`slurm_reservation_cpus_idle{reservation="node2_alice"}`:       0,
	`slurm_reservation_cores{reservation="maint_window"}`:          8,
	`slurm_license_configured{license="fluent"}`:                   2,
	`slurm_license_used{license="fluent"}`:                         2,
	`slurm_license_used{license="matlab"}`:                         1,
	`slurm_cluster_node_state_cpus{state="drained"}`:               4,
}

var slurm2411Queue = map[string]float64{
	`slurm_queue_jobs_pending{partition="batch",reason="Resources"}`:                      1,
	`slurm_queue_jobs_pending{partition="batch",reason="Licenses"}`:                       1,
	`slurm_queue_jobs_pending{partition="batch",reason="JobArrayTaskLimit"}`:              2,
	`slurm_jobs_ended_total{account="chemistry",partition="batch",state="out_of_memory"}`: 1,
	`slurm_jobs_ended_total{account="physics",partition="debug",state="cancelled"}`:       1,
}

// slurm2605 are read off the 26.05 "running" capture (forky VM, 00:13): the
// cluster of 24.11's, job numbers shifted (job 14 holds the fluent pool).
var slurm2605 = map[string]float64{
	`slurm_cluster_node_info{features="",node="node2",partitions="batch",reason="disk replaced, burn-in pending",state="drained"}`: 1,
	`slurm_cluster_node_cpu_load{node="node1"}`: 0.67,
	`slurm_reservation_info{accounts="",flags="ignore_jobs,spec_nodes",nodes="node2",partition="",reservation="node2_alice",state="active",users="alice"}`:                       1,
	`slurm_reservation_info{accounts="",flags="maint,ignore_jobs,spec_nodes,all_nodes",nodes="node[1-2]",partition="",reservation="maint_window",state="inactive",users="root"}`: 1,
	`slurm_reservation_cpus_allocated{reservation="maint_window"}`: 4,
	`slurm_license_used{license="fluent"}`:                         2,
	`slurm_license_used{license="matlab"}`:                         1,
}

var slurm2605Queue = map[string]float64{
	`slurm_queue_jobs_pending{partition="batch",reason="Resources"}`:                      1,
	`slurm_queue_jobs_pending{partition="batch",reason="Licenses"}`:                       1,
	`slurm_queue_jobs_pending{partition="batch",reason="JobArrayTaskLimit"}`:              2,
	`slurm_queue_jobs_pending{partition="debug",reason="BeginTime"}`:                      1,
	`slurm_jobs_ended_total{account="chemistry",partition="batch",state="out_of_memory"}`: 1,
	`slurm_jobs_ended_total{account="physics",partition="debug",state="cancelled"}`:       1,
}

// TestSlurmGolden renders the whole controller output of each capture set,
// from the JSON forms (auto) and from the text forms, against a golden and
// values read off the captures by hand.
func TestSlurmGolden(t *testing.T) {
	utc := func(s string) time.Time {
		v, err := time.ParseInLocation("2006-01-02T15:04:05", s, time.Local)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	for _, c := range []struct {
		golden, dir, when string
		format            slurmcli.Format
		built, scraped    time.Time
		flags             []string
		want              []map[string]float64
	}{
		// The old 22.05 capture has no reservations, licenses or -O text.
		{"running", "22.05", "running", slurmcli.FormatAuto, utc("2026-11-21T12:10:00"), utc("2026-11-21T12:10:00"),
			[]string{"--collector.slurm_sacct.since=2026-11-21T12:00:00", "--collector.slurm_reservations=false", "--collector.slurm_licenses=false"},
			[]map[string]float64{slurmRunning2205}},
		{"busy", "22.05", "busy", slurmcli.FormatAuto, utc("2026-11-25T00:12:00"), utc("2026-11-25T00:13:36"),
			[]string{"--collector.slurm_sacct.since=2026-11-25T00:00:00"}, []map[string]float64{slurmBusy2205, slurmBusy2205JSON}},
		{"busy-text", "22.05", "busy", slurmcli.FormatText, utc("2026-11-25T00:12:00"), utc("2026-11-25T00:13:36"),
			[]string{"--collector.slurm_sacct.since=2026-11-25T00:00:00"}, []map[string]float64{slurmBusy2205, slurmBusy2205Text}},
		{"24.11-running", "24.11", "running", slurmcli.FormatAuto, utc("2026-11-24T23:38:00"), utc("2026-11-24T23:40:00"),
			[]string{"--collector.slurm_sacct.since=2026-11-24T23:00:00"}, []map[string]float64{slurm2411, slurm2411Queue}},
		// The 24.11 and 26.05 captures have no squeue -O text: their queue
		// is checked in JSON only.
		{"24.11-running-text", "24.11", "running", slurmcli.FormatText, utc("2026-11-24T23:38:00"), utc("2026-11-24T23:40:00"),
			[]string{"--collector.slurm_sacct.since=2026-11-24T23:00:00", "--collector.slurm_jobs=false", "--collector.slurm_queue_wait=false"},
			[]map[string]float64{slurm2411}},
		{"26.05-running", "26.05", "running", slurmcli.FormatAuto, utc("2026-11-25T00:12:00"), utc("2026-11-25T00:14:00"),
			[]string{"--collector.slurm_sacct.since=2026-11-25T00:00:00"}, []map[string]float64{slurm2605, slurm2605Queue}},
		{"26.05-running-text", "26.05", "running", slurmcli.FormatText, utc("2026-11-25T00:12:00"), utc("2026-11-25T00:14:00"),
			[]string{"--collector.slurm_sacct.since=2026-11-25T00:00:00", "--collector.slurm_jobs=false", "--collector.slurm_queue_wait=false"},
			[]map[string]float64{slurm2605}},
	} {
		t.Run(c.golden, func(t *testing.T) {
			dir := filepath.Join("..", "..", "testdata", "slurm", c.dir)
			f := slurmclitest.New(t)
			f.Fixtures(dir, c.when)
			f.Sacct(dir, c.when)
			clk := testutil.NewClock(c.built)
			exp := slurmExporter(t, sharedWithClock(f, c.format, clk), append([]string{"--collector.slurm_commands=false"}, c.flags...)...)
			clk.Add(c.scraped.Sub(c.built))
			g := slurmGather(context.Background(), exp)
			expo := testutil.Exposition(t, g)
			testutil.Golden(t, filepath.Join("..", "..", "testdata", "slurm", c.golden+".golden"), expo)
			got := testutil.Samples(t, expo)
			for _, w := range c.want {
				slurmExpect(t, "", got, w)
			}
			for k, v := range got {
				if len(k) > 34 && k[:34] == `jobscope_scrape_collector_success{` && v != 1 {
					t.Errorf("%s = %v", k, v)
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
