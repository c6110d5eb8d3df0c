// SPDX-License-Identifier: Apache-2.0

package power

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestEmbeddedFactors(t *testing.T) {
	rows, err := ParseFactors(factorsCSV)
	if err != nil || len(rows) < 200 {
		t.Fatalf("%d rows, err %v", len(rows), err)
	}
	seen := map[string]bool{}
	for _, r := range rows {
		if len(r.ISO2) != 2 || len(r.ISO3) != 3 || r.Year < 2000 || r.GramsPerKWh < 0 || r.GramsPerKWh > 1500 {
			t.Errorf("suspicious row %+v", r)
		}
		if seen[r.ISO2] {
			t.Errorf("duplicate %s", r.ISO2)
		}
		seen[r.ISO2] = true
	}
	fr, err := LookupCountry("fr")
	if err != nil || fr.GramsPerKWh < 20 || fr.GramsPerKWh > 100 || fr.Year < 2023 {
		t.Fatalf("FR: %+v %v", fr, err)
	}
	if de, _ := LookupCountry("DEU"); de.Country != "Germany" {
		t.Fatalf("DEU: %+v", de)
	}
	if mx, err := LookupCountry("MX"); err != nil || mx.Country != "Mexico" {
		t.Fatalf("MX: %+v %v", mx, err)
	}
	if _, err := LookupCountry("XX"); err == nil {
		t.Fatal("unknown country accepted")
	}
}

func TestParseFactorsBad(t *testing.T) {
	for _, in := range []string{"h\nFR,FRA,France,2023\n", "h\nFR,FRA,France,x,1\n", "h\nFR,FRA,France,2023,-1\n"} {
		if _, err := ParseFactors([]byte(in)); err == nil {
			t.Errorf("accepted %q", in)
		}
	}
}

// local starts an httptest server (127.0.0.1 only) counting its hits.
func local(t *testing.T, h http.HandlerFunc) (*httptest.Server, *atomic.Int32) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		h(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, &hits
}

func TestElectricityMaps(t *testing.T) {
	srv, hits := local(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v3/carbon-intensity/latest" || r.URL.Query().Get("zone") != "DE" {
			http.NotFound(w, r)
			return
		}
		if r.Header.Get("auth-token") != "secret" {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		w.Write([]byte(`{"zone":"DE","carbonIntensity":302,"datetime":"2026-11-21T13:00:00.000Z","updatedAt":"2026-11-21T13:05:00.000Z","isEstimated":true}`))
	})
	f, err := ElectricityMaps(srv.Client(), srv.URL, "DE", "secret")(context.Background())
	if err != nil || f.GramsPerKWh != 302 || f.At.IsZero() {
		t.Fatalf("got %+v %v", f, err)
	}
	if _, err := ElectricityMaps(srv.Client(), srv.URL, "DE", "wrong")(context.Background()); err == nil || !strings.Contains(err.Error(), "401") {
		t.Fatalf("bad token: %v", err)
	}
	// Cached: many scrapes within the refresh interval make one request.
	p := newPoller(ElectricityMaps(srv.Client(), srv.URL, "DE", "secret"), time.Hour, 5*time.Second, nil)
	before := hits.Load()
	for range 10 {
		if v, _, ok, err := get(context.Background(), p); !ok || err != nil || v.GramsPerKWh != 302 {
			t.Fatalf("poller: %+v %v %v", v, ok, err)
		}
	}
	if n := hits.Load() - before; n != 1 {
		t.Fatalf("%d requests for 10 scrapes, want 1", n)
	}
}

func TestRTE(t *testing.T) {
	srv, _ := local(t, func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if r.URL.Path != "/api/explore/v2.1/catalog/datasets/eco2mix-national-tr/records" || q.Get("limit") != "1" || !strings.Contains(q.Get("select"), "taux_co2") {
			http.NotFound(w, r)
			return
		}
		w.Write([]byte(`{"total_count": 35040, "results": [{"date_heure": "2026-11-21T12:45:00+00:00", "taux_co2": 23}]}`))
	})
	f, err := RTE(srv.Client(), srv.URL)(context.Background())
	if err != nil || f.GramsPerKWh != 23 || f.At.IsZero() {
		t.Fatalf("got %+v %v", f, err)
	}
}

func TestLiveBadAnswers(t *testing.T) {
	for name, body := range map[string]string{
		"garbage": `<html>maintenance</html>`,
		"empty":   `{"results": []}`,
		"null":    `{"carbonIntensity": null, "results": [{"taux_co2": null}]}`,
		"neg":     `{"carbonIntensity": -5, "results": [{"taux_co2": -5}]}`,
	} {
		srv, _ := local(t, func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(body)) })
		if _, err := RTE(srv.Client(), srv.URL)(context.Background()); err == nil {
			t.Errorf("rte %s accepted", name)
		}
		if _, err := ElectricityMaps(srv.Client(), srv.URL, "FR", "t")(context.Background()); err == nil {
			t.Errorf("electricitymaps %s accepted", name)
		}
	}
	srv, _ := local(t, func(w http.ResponseWriter, r *http.Request) { http.Error(w, "down", http.StatusBadGateway) })
	if _, err := RTE(srv.Client(), srv.URL)(context.Background()); err == nil || !strings.Contains(err.Error(), "502") {
		t.Errorf("502: %v", err)
	}
}

// TestLiveTimeout: a provider that never answers is cut at the poller's
// timeout, and the scrape does not wait for it.
func TestLiveTimeout(t *testing.T) {
	release := make(chan struct{})
	srv, _ := local(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	defer close(release)
	p := newPoller(RTE(srv.Client(), srv.URL), time.Hour, 200*time.Millisecond, nil)
	var err error
	for i := 0; i < 200 && err == nil; i++ { // bounded: up to ~20 s
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		_, _, ok, e := get(ctx, p)
		cancel()
		if ok {
			t.Fatal("value from a server that never answered")
		}
		err = e
	}
	if err == nil || !strings.Contains(err.Error(), "deadline") {
		t.Fatalf("want a deadline error, got %v", err)
	}
}
