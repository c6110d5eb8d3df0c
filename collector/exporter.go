// SPDX-License-Identifier: Apache-2.0

package collector

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/jobscope/jobscope/discovery"
)

// Exporter runs the enabled collectors for each scrape.
type Exporter struct {
	collectors map[string]Collector
	names      []string
	opts       Options
	problems   *Problems
	serial     atomic.Uint64
	shared     sharedCollections
	pairs      *PairCache
	caps       *labelCaps

	durationDesc, successDesc, buildDesc, jobsDesc *Desc
	discoveryDescs                                 discoveryDescs
}

// BuildInfo labels jobscope_build_info.
type BuildInfo struct{ Version, Revision, GoVersion string }

// Options configure an exporter.
type Options struct {
	// Discoverer lists the node's jobs, once per scrape, and reports on
	// itself (jobscope_discovery_*); nil when no enabled collector needs
	// jobs.
	Discoverer *discovery.Discoverer
	// Jobs lists the jobs instead of a Discoverer (tests).
	Jobs func(ctx context.Context, problem discovery.Problem) []*discovery.Job
	// Problems counts bad input; nil makes a silent one.
	Problems *Problems
	Logger   *slog.Logger
	Info     BuildInfo
}

// NewExporter builds an exporter over built collectors.
func NewExporter(collectors map[string]Collector, o Options) *Exporter {
	names := make([]string, 0, len(collectors))
	for n := range collectors {
		names = append(names, n)
	}
	sort.Strings(names)
	if o.Problems == nil {
		o.Problems = NewProblems(nil)
	}
	return &Exporter{
		collectors: collectors, names: names, opts: o, problems: o.Problems, pairs: NewPairCache(), caps: newLabelCaps(o.Logger),
		durationDesc: NewDesc("jobscope_scrape_collector_duration_seconds",
			"Time a collector took in this scrape.", "collector"),
		successDesc: NewDesc("jobscope_scrape_collector_success",
			"1 if a collector finished this scrape without error and within the deadline, else 0.", "collector"),
		buildDesc: NewDesc("jobscope_build_info",
			"jobscope version, git revision and Go version; always 1.", "version", "revision", "goversion"),
		jobsDesc: NewDesc("jobscope_jobs",
			"Slurm jobs discovered in this node's cgroups in this scrape."),
		discoveryDescs: newDiscoveryDescs(),
	}
}

// Discovery returns job discovery (nil in controller mode without node
// collectors), for the landing page.
func (e *Exporter) Discovery() *discovery.Discoverer { return e.opts.Discoverer }

// Collector returns the named collector (nil when it is not enabled).
func (e *Exporter) Collector(name string) Collector { return e.collectors[name] }

// Names lists the enabled collectors.
func (e *Exporter) Names() []string { return e.names }

// Bind returns a prometheus.Collector that scrapes under ctx (the request's
// context with the scrape deadline).
func (e *Exporter) Bind(ctx context.Context) prometheus.Collector { return &bound{e: e, ctx: ctx} }

type bound struct {
	e   *Exporter
	ctx context.Context
}

// Describe sends nothing: the metric set depends on the node (unchecked collector).
func (b *bound) Describe(chan<- *prometheus.Desc) {}

func (b *bound) Collect(ch chan<- prometheus.Metric) { b.e.collectShared(b.ctx, ch) }

type result struct {
	metrics  []prometheus.Metric
	err      error
	duration time.Duration
}

func (e *Exporter) collect(ctx context.Context, ch chan<- prometheus.Metric) {
	start := time.Now()
	rd := e.newRound(ctx)
	results := make(map[string]chan result, len(e.names))
	for _, name := range e.names {
		rc := make(chan result, 1)
		results[name] = rc
		go e.runOne(rd.view(name), rc)
	}
	for _, name := range e.names {
		var r result
		// A collector that finished in time counts as finished even when
		// the deadline has passed since (select would pick at random).
		select {
		case r = <-results[name]:
		default:
			select {
			case r = <-results[name]:
			case <-ctx.Done():
				r = result{err: fmt.Errorf("deadline: %w", ctx.Err()), duration: time.Since(start)}
				e.problems.Report(name, "timeout", ctx.Err())
			}
		}
		for _, m := range r.metrics {
			ch <- m
		}
		success := 1.0
		if r.err != nil {
			success = 0
		}
		ch <- e.durationDesc.Gauge(r.duration.Seconds(), name)
		ch <- e.successDesc.Gauge(success, name)
	}
	if e.opts.Discoverer != nil || e.opts.Jobs != nil {
		s := rd.view("")
		ch <- e.jobsDesc.Gauge(float64(len(s.Jobs())))
		if e.opts.Discoverer != nil {
			e.discoveryDescs.collect(ch, rd.scan, e.opts.Discoverer.Status())
		}
	}
	ch <- e.buildDesc.Gauge(1, e.opts.Info.Version, e.opts.Info.Revision, e.opts.Info.GoVersion)
	e.problems.collect(ch)
}

// newRound starts a scrape: the next serial number, and discovery run at
// most once, when a collector first asks for the jobs.
func (e *Exporter) newRound(ctx context.Context) *round {
	// Pairs no collection used since the one before are dropped: what
	// ended jobs labelled leaves the cache without any job left to ask.
	e.pairs.rotate()
	r := &round{ctx: ctx, serial: e.serial.Add(1), problems: e.problems, pairs: e.pairs}
	problem := func(cause string, err error) { e.problems.Report("discovery", cause, err) }
	switch {
	case e.opts.Discoverer != nil:
		r.listJobs = func() []*discovery.Job {
			jobs, scan := e.opts.Discoverer.DiscoverStats(ctx, problem)
			r.scan = scan // read after every collector is done, or by Jobs' once
			return jobs
		}
	case e.opts.Jobs != nil:
		r.listJobs = func() []*discovery.Job { return e.opts.Jobs(ctx, problem) }
	}
	return r
}

func (e *Exporter) runOne(s *Scrape, rc chan<- result) {
	start := time.Now()
	var err error
	metrics := collectAll(func(mc chan<- prometheus.Metric) {
		if !s.protect(func() { err = e.collectors[s.name].Collect(s, mc) }) || (err == nil && s.panicked.Load()) {
			err = errors.New("panic: see the logged stack (cause panic)")
		}
	})
	switch {
	case err == nil, s.panicked.Load():
	case errors.Is(err, ErrNoData):
		e.problems.Report(s.name, "no_data", err)
	case errors.Is(err, ErrUnavailable):
		// Its cause was logged once when the collector was built.
		e.problems.ReportLogged(s.name, causeOr(err, "unavailable"))
	default:
		e.problems.Report(s.name, causeOr(err, "collect_failed"), err)
	}
	rc <- result{metrics: metrics, err: err, duration: time.Since(start)}
}

// Close releases what collectors hold (BPF links, library handles).
func (e *Exporter) Close() {
	for _, name := range e.names {
		if c, ok := e.collectors[name].(interface{ Close() error }); ok {
			if err := c.Close(); err != nil && e.opts.Logger != nil {
				e.opts.Logger.Warn("closing collector", "collector", name, "err", err)
			}
		}
	}
}
