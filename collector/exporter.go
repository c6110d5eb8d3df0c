package collector

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sort"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/jobscope/jobscope/collector/discovery"
)

// Exporter runs the enabled collectors for each scrape.
type Exporter struct {
	collectors map[string]Collector
	names      []string
	disc       *discovery.Discoverer
	problems   *Problems
	log        *slog.Logger
	info       BuildInfo

	durationDesc, successDesc, buildDesc, jobsDesc *prometheus.Desc
	discoveryDescs                                 discoveryDescs
}

// BuildInfo labels jobscope_build_info.
type BuildInfo struct{ Version, Revision, GoVersion string }

// NewExporter builds an exporter over built collectors.
func NewExporter(collectors map[string]Collector, disc *discovery.Discoverer, problems *Problems, log *slog.Logger, info BuildInfo) *Exporter {
	names := make([]string, 0, len(collectors))
	for n := range collectors {
		names = append(names, n)
	}
	sort.Strings(names)
	return &Exporter{
		collectors: collectors, names: names, disc: disc, problems: problems, log: log, info: info,
		durationDesc: prometheus.NewDesc("jobscope_scrape_collector_duration_seconds",
			"Time a collector took in this scrape.", []string{"collector"}, nil),
		successDesc: prometheus.NewDesc("jobscope_scrape_collector_success",
			"1 if a collector finished this scrape without error and within the deadline, else 0.", []string{"collector"}, nil),
		buildDesc: prometheus.NewDesc("jobscope_build_info",
			"jobscope version, git revision and Go version; always 1.", []string{"version", "revision", "goversion"}, nil),
		jobsDesc: prometheus.NewDesc("jobscope_jobs",
			"Slurm jobs discovered in this node's cgroups in this scrape.", nil, nil),
		discoveryDescs: newDiscoveryDescs(),
	}
}

// Names lists the enabled collectors.
func (e *Exporter) Names() []string { return e.names }

// Discovery returns job discovery (nil in controller mode without node
// collectors), for the landing page.
func (e *Exporter) Discovery() *discovery.Discoverer { return e.disc }

// Bind returns a prometheus.Collector that scrapes under ctx (the request's
// context with the scrape deadline).
func (e *Exporter) Bind(ctx context.Context) prometheus.Collector { return &bound{e: e, ctx: ctx} }

type bound struct {
	e   *Exporter
	ctx context.Context
}

// Describe sends nothing: the metric set depends on the node (unchecked collector).
func (b *bound) Describe(chan<- *prometheus.Desc) {}

func (b *bound) Collect(ch chan<- prometheus.Metric) { b.e.collect(b.ctx, ch) }

type result struct {
	metrics  []prometheus.Metric
	err      error
	duration time.Duration
}

func (e *Exporter) collect(ctx context.Context, ch chan<- prometheus.Metric) {
	start := time.Now()
	jobs, scan := e.jobsOnce(ctx)
	results := make(map[string]chan result, len(e.names))
	for _, name := range e.names {
		rc := make(chan result, 1)
		results[name] = rc
		go e.runOne(ctx, name, jobs, rc)
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
		ch <- prometheus.MustNewConstMetric(e.durationDesc, prometheus.GaugeValue, r.duration.Seconds(), name)
		ch <- prometheus.MustNewConstMetric(e.successDesc, prometheus.GaugeValue, success, name)
	}
	if e.disc != nil {
		ch <- prometheus.MustNewConstMetric(e.jobsDesc, prometheus.GaugeValue, float64(len(jobs())))
		e.discoveryDescs.collect(ch, scan(), e.disc.Status())
	}
	ch <- prometheus.MustNewConstMetric(e.buildDesc, prometheus.GaugeValue, 1, e.info.Version, e.info.Revision, e.info.GoVersion)
	e.problems.collect(ch)
}

// jobsOnce runs discovery at most once per scrape, when a collector asks;
// scan says what that pass saw.
func (e *Exporter) jobsOnce(ctx context.Context) (jobs func() []*discovery.Job, scan func() discovery.ScanStats) {
	var once sync.Once
	var found []*discovery.Job
	var stats discovery.ScanStats
	jobs = func() []*discovery.Job {
		once.Do(func() {
			if e.disc != nil {
				found, stats = e.disc.DiscoverStats(ctx, func(cause string, err error) { e.problems.Report("discovery", cause, err) })
			}
		})
		return found
	}
	return jobs, func() discovery.ScanStats { jobs(); return stats }
}

func (e *Exporter) runOne(ctx context.Context, name string, jobs func() []*discovery.Job, rc chan<- result) {
	start := time.Now()
	mc := make(chan prometheus.Metric, 256)
	var metrics []prometheus.Metric
	drained := make(chan struct{})
	go func() {
		for m := range mc {
			metrics = append(metrics, m)
		}
		close(drained)
	}()
	var err error
	func() {
		defer func() {
			if p := recover(); p != nil {
				err = fmt.Errorf("panic: %v", p)
				e.problems.Report(name, "panic", fmt.Errorf("%v\n%s", p, debug.Stack()))
			}
		}()
		err = e.collectors[name].Collect(NewScrape(ctx, name, jobs, e.problems), mc)
	}()
	close(mc)
	<-drained
	switch {
	case err == nil:
	case errors.Is(err, ErrNoData):
		e.problems.Report(name, "no_data", err)
	case errors.Is(err, ErrUnavailable):
		// Its cause was logged once when the collector was built.
		e.problems.ReportLogged(name, "unavailable")
	default:
		e.problems.Report(name, "collect_failed", err)
	}
	rc <- result{metrics: metrics, err: err, duration: time.Since(start)}
}

// Close releases what collectors hold (BPF links, library handles).
func (e *Exporter) Close() {
	for _, name := range e.names {
		if c, ok := e.collectors[name].(interface{ Close() error }); ok {
			if err := c.Close(); err != nil && e.log != nil {
				e.log.Warn("closing collector", "collector", name, "err", err)
			}
		}
	}
}
