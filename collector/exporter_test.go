// SPDX-License-Identifier: Apache-2.0

package collector

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/jobscope/jobscope/discovery"
	"github.com/jobscope/jobscope/internal/testutil"
)

type funcCollector func(s *Scrape, ch chan<- prometheus.Metric) error

func (f funcCollector) Collect(s *Scrape, ch chan<- prometheus.Metric) error { return f(s, ch) }

var testDesc = NewDesc("jobscope_test_value", "Test value.")

// A hung collector costs only its own success; a panicking one too; the
// scrape answers within its deadline.
func TestExporterDeadlineAndPanic(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	cs := map[string]Collector{
		"good": funcCollector(func(s *Scrape, ch chan<- prometheus.Metric) error {
			ch <- testDesc.Gauge(1)
			return nil
		}),
		"hung": funcCollector(func(s *Scrape, ch chan<- prometheus.Metric) error {
			<-release // ignores its context, the worst case
			return nil
		}),
		"panics": funcCollector(func(s *Scrape, ch chan<- prometheus.Metric) error { panic("boom") }),
		"nodata": funcCollector(func(s *Scrape, ch chan<- prometheus.Metric) error { return ErrNoData }),
		"fails": funcCollector(func(s *Scrape, ch chan<- prometheus.Metric) error {
			return errors.New("broken")
		}),
	}
	problems := NewProblems(nil)
	exp := NewExporter(cs, Options{Problems: problems})
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(exp.Bind(ctx))
	done := make(chan string, 1)
	go func() { done <- string(testutil.Exposition(t, reg)) }()
	var out string
	select {
	case out = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("scrape did not return after its deadline")
	}
	for _, want := range []string{
		"jobscope_test_value 1",
		`jobscope_scrape_collector_success{collector="good"} 1`,
		`jobscope_scrape_collector_success{collector="hung"} 0`,
		`jobscope_scrape_collector_success{collector="panics"} 0`,
		`jobscope_scrape_collector_success{collector="nodata"} 0`,
		`jobscope_scrape_collector_success{collector="fails"} 0`,
		`jobscope_collector_errors_total{cause="timeout",collector="hung"} 1`,
		`jobscope_collector_errors_total{cause="panic",collector="panics"} 1`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %s in\n%s", want, out)
		}
	}
}

// Collectors that finished before the deadline keep their result even when
// a slow one used the deadline up.
func TestExporterFinishedBeforeDeadline(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	cs := map[string]Collector{
		"a_slow": funcCollector(func(s *Scrape, ch chan<- prometheus.Metric) error { <-release; return nil }),
	}
	for i := range 20 {
		cs[fmt.Sprintf("b_fast%02d", i)] = funcCollector(func(s *Scrape, ch chan<- prometheus.Metric) error { return nil })
	}
	exp := NewExporter(cs, Options{Problems: NewProblems(nil)})
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(exp.Bind(ctx))
	out := string(testutil.Exposition(t, reg))
	failed := 0
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "jobscope_scrape_collector_success{") && strings.HasSuffix(l, " 0") {
			failed++
		}
	}
	if failed != 1 || !strings.Contains(out, `jobscope_scrape_collector_success{collector="a_slow"} 0`) {
		t.Errorf("want only a_slow failed, got %d failures:\n%s", failed, out)
	}
}

// A panic in a collector's worker goroutine (one job's read) is recovered,
// counted as cause "panic" and logged once per scrape; that collector's
// success is 0 and everything else stays: the other job's series, the other
// collector. Before the job pool recovered, such a panic, out of reach of
// the framework's recover, ended the process.
func TestWorkerPanicKeepsScrape(t *testing.T) {
	jobs := []*discovery.Job{{ID: "100", Version: 2, Dir: "/j100"}, {ID: "101", Version: 2, Dir: "/j101"}}
	perJob := NewDesc("jobscope_test_job_value", "Test value per job.", "jobid")
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	problems := NewProblems(log)
	cs := map[string]Collector{
		"perjob": funcCollector(func(s *Scrape, ch chan<- prometheus.Metric) error {
			s.EachJob(NewJobPool(2), ch, func(j *discovery.Job, ch chan<- prometheus.Metric) {
				if j.ID == "100" {
					panic("worker panic")
				}
				ch <- perJob.Gauge(1, j.ID)
			})
			return nil
		}),
		"good": funcCollector(func(s *Scrape, ch chan<- prometheus.Metric) error {
			ch <- testDesc.Gauge(1)
			return nil
		}),
	}
	exp := NewExporter(cs, Options{
		Jobs:     func(context.Context, discovery.Problem) []*discovery.Job { return jobs },
		Problems: problems, Logger: log,
	})
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(exp.Bind(context.Background()))
	out := string(testutil.Exposition(t, reg))
	for _, want := range []string{
		`jobscope_test_job_value{jobid="101"} 1`,
		"jobscope_test_value 1",
		`jobscope_scrape_collector_success{collector="perjob"} 0`,
		`jobscope_scrape_collector_success{collector="good"} 1`,
		`jobscope_collector_errors_total{cause="panic",collector="perjob"} 1`,
	} {
		if !strings.Contains(out, want+"\n") {
			t.Errorf("missing %s in\n%s", want, out)
		}
	}
	if strings.Contains(out, `jobid="100"`) {
		t.Error("a series of the job whose read panicked")
	}
	if n := strings.Count(logs.String(), "cause=panic"); n != 1 {
		t.Errorf("panics logged %d times, want once:\n%s", n, logs.String())
	}
}
