// SPDX-License-Identifier: Apache-2.0

package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/jobscope/jobscope/collector"
)

// blockingCollector holds its scrape until release; started (buffered,
// optional) hears of each Collect, so a test knows the scrape holds its
// slot without guessing how long that takes on a loaded machine.
type blockingCollector struct{ release, started chan struct{} }

func (b blockingCollector) Collect(s *collector.Scrape, ch chan<- prometheus.Metric) error {
	if b.started != nil {
		select {
		case b.started <- struct{}{}:
		default:
		}
	}
	select {
	case <-b.release:
	case <-s.Context().Done():
	}
	return nil
}

// With --web.max-requests=1 a second scrape waits for the first; one whose
// deadline passes while waiting gets 503.
func TestScrapeSlots(t *testing.T) {
	release, started := make(chan struct{}), make(chan struct{}, 1)
	exp := collector.NewExporter(map[string]collector.Collector{"block": blockingCollector{release, started}}, collector.Options{Problems: collector.NewProblems(nil)})
	logger, _ := newLogger("error", "json", io.Discard)
	o := &options{metricsPath: "/metrics", scrapeTimeout: 10 * time.Second, maxRequests: 1}
	srv := httptest.NewServer(newMux(exp, o, logger))
	defer srv.Close()
	first := make(chan int, 1)
	go func() {
		resp, err := http.Get(srv.URL + "/metrics")
		if err != nil {
			first <- 0
			return
		}
		resp.Body.Close()
		first <- resp.StatusCode
	}()
	// The first scrape holds the slot once its collector runs: waited
	// for, not slept on (a 200 ms sleep let the second scrape take the slot
	// first on a loaded machine).
	select {
	case <-started:
	case <-time.After(20 * time.Second):
		t.Fatal("the first scrape never reached its collector")
	}
	req, _ := http.NewRequest("GET", srv.URL+"/metrics", nil)
	req.Header.Set("X-Prometheus-Scrape-Timeout-Seconds", "0.8")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("second scrape: %d, want 503", resp.StatusCode)
	}
	close(release)
	select {
	case code := <-first:
		if code != 200 {
			t.Errorf("first scrape: %d", code)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("first scrape never answered")
	}
}
