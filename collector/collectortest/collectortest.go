// SPDX-License-Identifier: Apache-2.0

// Package collectortest holds helpers for the collectors' tests: fixture
// users and owners, and gatherers over an exporter.
package collectortest

import (
	"context"
	"errors"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/jobscope/jobscope/collector"
	"github.com/jobscope/jobscope/discovery"
)

// FixtureUsers are the uids of the fixture nodes.
var FixtureUsers = map[int]string{1001: "alice", 1002: "bob", 1003: "carol"}

// FixtureOwner stands for the owner of a fixture /proc/<pid>: whoever
// checked the tree out, so it must not decide a job's user.
func FixtureOwner(string) (int, bool) { return 0, true }

// LookupUser resolves the fixture uids.
func LookupUser(uid int) (string, error) {
	if n, ok := FixtureUsers[uid]; ok {
		return n, nil
	}
	return "", errors.New("unknown user id")
}

// Gatherer is a pedantic registry scraping exp without a deadline.
func Gatherer(exp *collector.Exporter) prometheus.Gatherer {
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(exp.Bind(context.Background()))
	return reg
}

var serial atomic.Uint64

// Scrape is a scrape of the one collector called name, numbered after
// every scrape the test binary made before, as an exporter would.
func Scrape(ctx context.Context, name string, jobs []*discovery.Job, p *collector.Problems) *collector.Scrape {
	return ScrapeWith(ctx, name, collector.ScrapeOptions{Jobs: jobs, Problems: p})
}

// ScrapeWith is Scrape with the options given (its serial number set).
func ScrapeWith(ctx context.Context, name string, o collector.ScrapeOptions) *collector.Scrape {
	o.Serial = serial.Add(1)
	return collector.NewScrape(ctx, name, o)
}

// Discoverer is job discovery over a fixture node at root
// ({cgroup,proc,props} under it), with the fixture users.
func Discoverer(t testing.TB, root string) *discovery.Discoverer {
	t.Helper()
	layout, err := discovery.DetectLayout(filepath.Join(root, "cgroup"), "")
	if err != nil {
		t.Fatal(err)
	}
	return discovery.New(discovery.Config{
		Layout: layout, ProcFS: filepath.Join(root, "proc"), PropsDir: filepath.Join(root, "props"),
		LookupUser: LookupUser, ProcOwner: FixtureOwner,
	})
}
