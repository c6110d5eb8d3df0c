package collector

import (
	"slices"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// Per-job series are most of a node's output (60-odd per job), and
// prometheus.MustNewConstMetric builds every label pair anew: ~19
// allocations a series. JobSeries builds a job's label pairs once per scrape
// and shares pairs of bounded extra labels (type="anon", core="3") across
// jobs and scrapes, so a series costs one allocation and one label slice.
// The pairs are never written after creation, which is what sharing needs.

// PairCache holds shared label pairs of bounded label values.
type PairCache struct {
	mu    sync.Mutex
	pairs map[string]*dto.LabelPair
}

// pairCacheMax bounds the cache; past it pairs are built per series.
const pairCacheMax = 1 << 14

func NewPairCache() *PairCache { return &PairCache{pairs: map[string]*dto.LabelPair{}} }

func (c *PairCache) get(name, value string) *dto.LabelPair {
	key := name + "\x00" + value
	c.mu.Lock()
	defer c.mu.Unlock()
	if p, ok := c.pairs[key]; ok {
		return p
	}
	p := &dto.LabelPair{Name: &name, Value: &value}
	if len(c.pairs) < pairCacheMax {
		c.pairs[key] = p
	}
	return p
}

// JobSeries makes the series of one job in one scrape.
type JobSeries struct {
	base  []*dto.LabelPair // jobid, user, account, sorted by name
	cache *PairCache
}

func NewJobSeries(values []string, cache *PairCache) *JobSeries {
	base := make([]*dto.LabelPair, 0, len(values))
	for i, v := range values {
		name, value := jobLabelNames[i], v
		base = append(base, &dto.LabelPair{Name: &name, Value: &value})
	}
	slices.SortFunc(base, func(a, b *dto.LabelPair) int { return strings.Compare(a.GetName(), b.GetName()) })
	return &JobSeries{base: base, cache: cache}
}

// Metric returns a series of d. names are d's extra label names (after the
// job labels), values their values.
func (js *JobSeries) Metric(d *prometheus.Desc, names []string, t prometheus.ValueType, v float64, values ...string) prometheus.Metric {
	m := &fastMetric{desc: d, typ: t, val: v, labels: js.base}
	if len(values) > 0 {
		labels := make([]*dto.LabelPair, 0, len(js.base)+len(values))
		labels = append(labels, js.base...)
		for i, val := range values {
			labels = append(labels, js.cache.get(names[i], val))
		}
		slices.SortFunc(labels, func(a, b *dto.LabelPair) int { return strings.Compare(a.GetName(), b.GetName()) })
		m.labels = labels
	}
	return m
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

var jobLabelNames = []string{"jobid", "user", "account"}
