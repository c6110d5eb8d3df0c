// SPDX-License-Identifier: Apache-2.0

package collector

import (
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/jobscope/jobscope/discovery"
)

// Per-job series are most of a node's output (60-odd per job), and
// prometheus.MustNewConstMetric builds every label pair anew: ~19
// allocations a series. JobSeries builds a job's label pairs once per scrape
// and shares pairs of extra labels through a PairCache, so a series costs
// one allocation and one label slice. Label names come from the Desc, never
// from parsing its text.

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
	m := newFastMetric(d.prom, t, v, js.base)
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
// One collection serves every scrape that waited for it, so one fastMetric
// is written out by several scrapes at once: everything Write hands out is
// built here, once, and Write only copies pointers (as client_golang's own
// const metrics do).
type fastMetric struct {
	desc    *prometheus.Desc
	val     float64
	labels  []*dto.LabelPair
	counter *dto.Counter // exactly one of counter and gauge is set
	gauge   *dto.Gauge
	// cv and gv are what counter and gauge point to: one allocation for
	// the whole series.
	cv dto.Counter
	gv dto.Gauge
}

func newFastMetric(desc *prometheus.Desc, t prometheus.ValueType, v float64, labels []*dto.LabelPair) *fastMetric {
	m := &fastMetric{desc: desc, val: v, labels: labels}
	if t == prometheus.CounterValue {
		m.cv.Value = &m.val
		m.counter = &m.cv
	} else {
		m.gv.Value = &m.val
		m.gauge = &m.gv
	}
	return m
}

// withLabels returns a copy of m with other labels.
func (m *fastMetric) withLabels(labels []*dto.LabelPair) *fastMetric {
	t := prometheus.GaugeValue
	if m.counter != nil {
		t = prometheus.CounterValue
	}
	return newFastMetric(m.desc, t, m.val, labels)
}

func (m *fastMetric) Desc() *prometheus.Desc { return m.desc }

// Write never writes to m (see fastMetric).
func (m *fastMetric) Write(out *dto.Metric) error {
	out.Label = m.labels
	out.Counter = m.counter
	out.Gauge = m.gauge
	return nil
}
