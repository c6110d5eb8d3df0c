// SPDX-License-Identifier: Apache-2.0

package collector

import (
	"context"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/jobscope/jobscope/discovery"
	"github.com/jobscope/jobscope/internal/testutil"
)

// One job whose read never returns costs that job only: every scrape
// exports the other jobs, the collector's success stays 1, the lost job is
// counted as cause job_timeout, and the pool neither grows nor leaks a
// goroutine per scrape while the read stays blocked.
func TestJobTimeoutLeavesOneJobOut(t *testing.T) {
	var jobs []*discovery.Job
	for _, id := range []string{"100", "101", "102", "103", "104", "105", "106", "107"} {
		jobs = append(jobs, &discovery.Job{ID: id, Version: 2, Dir: "/j" + id})
	}
	block := make(chan struct{})
	var released atomic.Bool
	perJob := NewDesc("jobscope_test_job_value", "Test value per job.", "jobid")
	pool := NewJobPool(2)
	exp := NewExporter(map[string]Collector{
		"perjob": funcCollector(func(s *Scrape, ch chan<- prometheus.Metric) error {
			run := s.EachJob(pool, ch, func(j *discovery.Job, ch chan<- prometheus.Metric) {
				ch <- perJob.Gauge(1, j.ID)
				if j.ID == "103" {
					<-block // a read(2) that does not return
				}
			})
			if !released.Load() && (run.Done != len(jobs)-1 || len(run.TimedOut) != 1 || run.TimedOut[0].ID != "103") {
				t.Errorf("scrape %d: %+v, want 7 done and job 103 timed out", s.Serial(), run)
			}
			return nil
		}),
	}, Options{
		Jobs:     func(context.Context, discovery.Problem) []*discovery.Job { return jobs },
		Problems: NewProblems(nil),
	})
	scrape := func() string {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		reg := prometheus.NewPedanticRegistry()
		reg.MustRegister(exp.Bind(ctx))
		return string(testutil.Exposition(t, reg))
	}
	var goroutines []int
	for i := range 20 {
		out := scrape()
		if n := strings.Count(out, "jobscope_test_job_value{"); n != 7 || strings.Contains(out, `jobid="103"`) {
			t.Fatalf("scrape %d: %d jobs exported, want 7 without job 103:\n%s", i, n, out)
		}
		for _, want := range []string{
			`jobscope_scrape_collector_success{collector="perjob"} 1`,
			`jobscope_collector_errors_total{cause="job_timeout",collector="perjob"} ` + strconv.Itoa(i+1),
		} {
			if !strings.Contains(out, want+"\n") {
				t.Fatalf("scrape %d: missing %s in\n%s", i, want, out)
			}
		}
		if w := pool.Workers(); w > 3 {
			t.Fatalf("scrape %d: %d pool workers, want at most size+1 with one stuck", i, w)
		}
		goroutines = append(goroutines, runtime.NumGoroutine())
	}
	// The leak this guards against starts a goroutine per scrape (18 more
	// by the last); a goroutine that the process starts once meanwhile
	// (the exporter's idle timer, a runtime helper on a busy machine) is one
	// more for good, and was seen here as 8 -> 9 halfway through.
	if goroutines[19]-goroutines[1] > 3 {
		t.Errorf("goroutines grew over 20 scrapes: %v", goroutines)
	}
	released.Store(true)
	close(block) // the read returns: its worker leaves, the pool is back to its size
	deadline := time.Now().Add(5 * time.Second)
	for pool.Workers() != 2 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if w := pool.Workers(); w != 2 {
		t.Errorf("%d pool workers after the read returned, want 2", w)
	}
	if out := scrape(); strings.Count(out, "jobscope_test_job_value{") != 8 {
		t.Errorf("job 103 not back after its read returned:\n%s", out)
	}
}

// With every worker of the pool stuck (the replacements too), a scrape
// does not spend its deadline waiting for one: it leaves every job out at
// once, counted as job_timeout, and the pool stays at twice its size.
func TestJobPoolAllStuck(t *testing.T) {
	var jobs []*discovery.Job
	for i := range 6 {
		jobs = append(jobs, &discovery.Job{ID: strconv.Itoa(200 + i), Version: 2, Dir: "/j" + strconv.Itoa(i)})
	}
	block := make(chan struct{})
	defer close(block)
	pool := NewJobPool(1)
	scrape := func() (JobsRun, time.Duration) {
		ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
		defer cancel()
		s := NewScrape(ctx, "perjob", ScrapeOptions{Serial: 1, Jobs: jobs, Problems: NewProblems(nil)})
		ch := make(chan prometheus.Metric, 16)
		start := time.Now()
		run := s.EachJob(pool, ch, func(*discovery.Job, chan<- prometheus.Metric) { <-block })
		return run, time.Since(start)
	}
	first, _ := scrape() // jobs 200 and 201 stick, one worker and its replacement
	if pool.Workers() != 2 || first.Done != 0 || len(first.TimedOut) != 6 {
		t.Fatalf("first scrape: %+v, %d workers", first, pool.Workers())
	}
	// A scrape that waits for a worker waits until its deadline (4 s); half
	// of it tells "at once" from that with room for a busy machine.
	run, took := scrape()
	if run.Done != 0 || len(run.TimedOut) != 6 || took > 2*time.Second || pool.Workers() != 2 {
		t.Errorf("second scrape: %+v in %v, %d workers; want every job left out at once, 2 workers", run, took, pool.Workers())
	}
}
