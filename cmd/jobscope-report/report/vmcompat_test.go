// SPDX-License-Identifier: Apache-2.0

package report

import (
	"math"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"testing"
	"time"

	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
)

// Limits of the stores with their default flags, per series.
const (
	vmMaxPoints   = 30000 // VictoriaMetrics -search.maxPointsPerTimeseries
	promMaxPoints = 11000 // Prometheus: longest range query it answers
)

var subqueryRange = regexp.MustCompile(`\[(\d+)s:(\d+)s\]`)

// subqueryPoints is the most points per series any subquery of q asks
// for: its range over its step, plus the steps VictoriaMetrics adds at
// the edges (it counted 43,208 for 30 days at one minute, 43,200 + 8).
func subqueryPoints(t *testing.T, q string) (most int, found bool) {
	t.Helper()
	for _, m := range subqueryRange.FindAllStringSubmatch(q, -1) {
		rng, _ := strconv.Atoi(m[1])
		step, _ := strconv.Atoi(m[2])
		if step == 0 {
			t.Fatalf("zero step in %s", q)
		}
		most, found = max(most, rng/step+10), true
	}
	return most, found
}

var lookbacks = []time.Duration{24 * time.Hour, 30 * 24 * time.Hour, 90 * 24 * time.Hour, 365 * 24 * time.Hour}

// TestBoundsQueriesFitBothStores: the subqueries that find a job's first
// and last sample stay under both stores' limits at any lookback (the
// issue's VictoriaMetrics refused 30 days at one minute: 43,208 points).
func TestBoundsQueriesFitBothStores(t *testing.T) {
	for _, lb := range lookbacks {
		step := boundsStep(lb)
		first, last := boundsQueries(`slurm_job_info{jobid="1"}`, lb, step)
		for _, q := range []string{first, last} {
			n, ok := subqueryPoints(t, q)
			if !ok {
				t.Fatalf("lookback %s: no subquery in %s", lb, q)
			}
			if n > vmMaxPoints || n > promMaxPoints {
				t.Errorf("lookback %s: %d points per series (%s)", lb, n, q)
			}
		}
		// Not coarser than it must be: refine reads one step of raw
		// samples at each bound.
		if step > subStep && (lb/(step-time.Second)) <= maxSubqueryPoints {
			t.Errorf("lookback %s: step %s coarser than needed", lb, step)
		}
		t.Logf("lookback %s: step %s", lb, step)
	}
}

// TestFigureQueriesFitBothStores: the figures' subqueries (means, the
// most processes) over a job as long as each lookback.
func TestFigureQueriesFitBothStores(t *testing.T) {
	at := time.Unix(1_800_000_000, 0)
	for _, lb := range lookbacks {
		s := newScope("1", "instance", []string{"n1"}, at.Add(-lb), at, time.Second)
		seen := 0
		for name, q := range figureQueries(s, true, DefaultConfig().Thresholds) {
			n, ok := subqueryPoints(t, q)
			if !ok {
				continue
			}
			seen++
			if n > vmMaxPoints || n > promMaxPoints {
				t.Errorf("job of %s: %s asks %d points per series: %s", lb, name, n, q)
			}
		}
		if seen == 0 {
			t.Fatalf("job of %s: no subqueries found; the pattern no longer matches the queries", lb)
		}
	}
}

// TestQueriesAskNoCache: every query carries nocache=1, without which
// VictoriaMetrics evaluates a query for the last 30 s at now-30s; other
// API calls do not need it.
func TestQueriesAskNoCache(t *testing.T) {
	got := map[string]string{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got[r.URL.Path] = r.URL.Query().Get("nocache")
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/api/v1/query":
			_, _ = w.Write([]byte(`{"status":"success","data":{"resultType":"vector","result":[]}}`))
		case "/api/v1/query_range":
			_, _ = w.Write([]byte(`{"status":"success","data":{"resultType":"matrix","result":[]}}`))
		default:
			_, _ = w.Write([]byte(`{"status":"success","data":[]}`))
		}
	}))
	defer srv.Close()
	p, err := newProm(PromConfig{URL: srv.URL, Timeout: 0}, http.DefaultTransport)
	if err != nil {
		t.Fatal(err)
	}
	p.timeout = 5 * time.Second
	ctx := t.Context()
	now := time.Now()
	if _, err := p.vector(ctx, "up", now); err != nil {
		t.Fatal(err)
	}
	if _, err := p.rangeQuery(ctx, "up", v1.Range{Start: now.Add(-time.Hour), End: now, Step: time.Minute}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.series(ctx, "up", now.Add(-time.Hour), now); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{"/api/v1/query": "1", "/api/v1/query_range": "1", "/api/v1/series": ""} {
		if got[path] != want {
			t.Errorf("%s: nocache=%q, want %q", path, got[path], want)
		}
	}
}

// TestSampleBoundsSkipStalenessMarkers: VictoriaMetrics returns the
// staleness marker after a job's last sample as a NaN sample; the e2e saw
// the job's last sample a scrape late without this.
func TestSampleBoundsSkipStalenessMarkers(t *testing.T) {
	m := model.Matrix{{Values: []model.SamplePair{
		{Timestamp: 1000, Value: 1}, {Timestamp: 2000, Value: 1}, {Timestamp: 3000, Value: model.SampleValue(math.NaN())},
	}}}
	first, last, iv := sampleBounds(m)
	if first.UnixMilli() != 1000 || last.UnixMilli() != 2000 || iv != time.Second {
		t.Errorf("bounds %d..%d interval %s, want 1000..2000 and 1s", first.UnixMilli(), last.UnixMilli(), iv)
	}
}
