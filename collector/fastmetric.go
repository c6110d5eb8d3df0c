package collector

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/jobscope/jobscope/discovery"
)

// Per-job series are most of a node's output (60-odd per job), and
// prometheus.MustNewConstMetric builds every label pair anew: ~19
// allocations a series. JobSeries builds a job's label pairs once per scrape
// and shares pairs of bounded extra labels (type="anon", core="3") across
// jobs and scrapes, so a series costs one allocation and one label slice.
// The pairs are never written after creation, which is what sharing needs.
// Label names come from the Desc, never from parsing its text.

// PairCache holds shared label pairs of bounded label values, by label
// name then value (two lookups, no key to build: this runs for every
// series).
type PairCache struct {
	mu    sync.Mutex
	pairs map[string]map[string]*dto.LabelPair
	n     int
}

// pairCacheMax bounds the cache; past it pairs are built per series.
const pairCacheMax = 1 << 14

// NewPairCache returns an empty cache; a collector keeps one for its life.
func NewPairCache() *PairCache { return &PairCache{pairs: map[string]map[string]*dto.LabelPair{}} }

func (c *PairCache) get(name, value string) *dto.LabelPair {
	c.mu.Lock()
	defer c.mu.Unlock()
	byValue := c.pairs[name]
	if p, ok := byValue[value]; ok {
		return p
	}
	p := &dto.LabelPair{Name: &name, Value: &value}
	if c.n < pairCacheMax {
		if byValue == nil {
			byValue = map[string]*dto.LabelPair{}
			c.pairs[name] = byValue
		}
		byValue[value] = p
		c.n++
	}
	return p
}

// JobSeries makes the series of one job in one scrape.
type JobSeries struct {
	base  []*dto.LabelPair // jobid, user, account, sorted by name
	cache *PairCache
}

// Job starts the series of j for one scrape.
func (c *PairCache) Job(j *discovery.Job) *JobSeries {
	values := j.Labels()
	base := make([]*dto.LabelPair, 0, len(values))
	for i, v := range values {
		name, value := discovery.JobLabelNames[i], validUTF8(v)
		base = append(base, &dto.LabelPair{Name: &name, Value: &value})
	}
	slices.SortFunc(base, func(a, b *dto.LabelPair) int { return strings.Compare(a.GetName(), b.GetName()) })
	return &JobSeries{base: base, cache: c}
}

// Metric returns a series of the per-job descriptor d; extra are the
// values of d's labels after the job labels. A descriptor that is not per
// job, or a wrong number of values, gives an invalid metric (that series
// fails at gather time; nothing panics).
func (js *JobSeries) Metric(d *Desc, t prometheus.ValueType, v float64, extra ...string) prometheus.Metric {
	names := d.Extra()
	if !d.job || len(extra) != len(names) {
		return prometheus.NewInvalidMetric(d.prom, fmt.Errorf("%s: %d extra label values for per-job labels %v", d.Name, len(extra), d.Labels))
	}
	m := &fastMetric{desc: d.prom, typ: t, val: v, labels: js.base}
	if len(extra) > 0 {
		labels := make([]*dto.LabelPair, 0, len(js.base)+len(extra))
		labels = append(labels, js.base...)
		for i, val := range extra {
			labels = append(labels, js.cache.get(names[i], validUTF8(val)))
		}
		slices.SortFunc(labels, func(a, b *dto.LabelPair) int { return strings.Compare(a.GetName(), b.GetName()) })
		m.labels = labels
	}
	return m
}

// Gauge is Metric for a gauge.
func (js *JobSeries) Gauge(d *Desc, v float64, extra ...string) prometheus.Metric {
	return js.Metric(d, prometheus.GaugeValue, v, extra...)
}

// Counter is Metric for a counter.
func (js *JobSeries) Counter(d *Desc, v float64, extra ...string) prometheus.Metric {
	return js.Metric(d, prometheus.CounterValue, v, extra...)
}

// validUTF8 keeps label values valid (Slurm metadata and executable paths
// are bytes; the exposition format wants UTF-8).
func validUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}

// fastMetric is a const metric whose label pairs are shared, read-only.
type fastMetric struct {
	desc    *prometheus.Desc
	typ     prometheus.ValueType
	val     float64
	labels  []*dto.LabelPair
	counter dto.Counter
	gauge   dto.Gauge
}

func (m *fastMetric) Desc() *prometheus.Desc { return m.desc }

func (m *fastMetric) Write(out *dto.Metric) error {
	out.Label = m.labels
	if m.typ == prometheus.CounterValue {
		m.counter.Value = &m.val
		out.Counter = &m.counter
	} else {
		m.gauge.Value = &m.val
		out.Gauge = &m.gauge
	}
	return nil
}
