// SPDX-License-Identifier: Apache-2.0

package collector

import (
	"fmt"
	"reflect"
	"slices"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/model"

	"github.com/jobscope/jobscope/discovery"
)

// Desc describes one metric. It keeps its name, help and label names, so
// series are built, counted and documented from these fields: nothing
// parses prometheus.Desc's debug string, whose format client_golang may
// change. A Desc has no constant labels.
type Desc struct {
	Name, Help string
	// Labels are the variable label names in order; a per-job
	// descriptor's start with the job labels.
	Labels []string
	job    bool
	prom   *prometheus.Desc
	// level is the lowest --metrics.level that emits the family; basicPart
	// says what basic emits of a family that full emits more of.
	level               Level
	basicPart, fullPart string
	// basicLabel (an index into Labels, when basicOnly) and basicValues
	// pick the series basic emits of a Partly family; Out drops the rest.
	basicOnly   bool
	basicLabel  int
	basicValues []string
}

// NewDesc builds a descriptor. A bad name or label list is a programming
// error caught by the collectors' tests (descriptors are built in
// constructors), so it panics here rather than at every scrape.
func NewDesc(name, help string, labels ...string) *Desc {
	if !model.LegacyValidation.IsValidMetricName(name) {
		panic(fmt.Sprintf("metric name %q is not valid", name))
	}
	for i, l := range labels {
		if !model.LegacyValidation.IsValidLabelName(l) || slices.Contains(labels[:i], l) {
			panic(fmt.Sprintf("%s: label %q is not valid or repeated", name, l))
		}
	}
	labels = slices.Clip(slices.Clone(labels))
	return &Desc{Name: name, Help: help, Labels: labels, prom: prometheus.NewDesc(name, help, labels, nil)}
}

// NewJobDesc builds a per-job descriptor: the job labels, then extra.
func NewJobDesc(name, help string, extra ...string) *Desc {
	d := NewDesc(name, help, append(slices.Clone(discovery.JobLabelNames), extra...)...)
	d.job = true
	return d
}

// Prom is the client_golang descriptor.
func (d *Desc) Prom() *prometheus.Desc { return d.prom }

// Extra returns the label names after the job labels (all of them for a
// descriptor that is not per job).
func (d *Desc) Extra() []string {
	if d.job {
		return d.Labels[len(discovery.JobLabelNames):]
	}
	return d.Labels
}

// Metric builds a const series. A wrong number of label values gives an
// invalid metric that fails only its own series at gather time, never a
// panic in a collector.
func (d *Desc) Metric(t prometheus.ValueType, v float64, values ...string) prometheus.Metric {
	values, err := d.labelValues(values)
	if err != nil {
		return prometheus.NewInvalidMetric(d.prom, err)
	}
	m, err := prometheus.NewConstMetric(d.prom, t, v, values...)
	if err != nil {
		return prometheus.NewInvalidMetric(d.prom, err)
	}
	return m
}

// Histogram builds a const histogram (buckets: cumulative counts by upper
// bound), checked as Metric is.
func (d *Desc) Histogram(count uint64, sum float64, buckets map[float64]uint64, values ...string) prometheus.Metric {
	values, err := d.labelValues(values)
	if err != nil {
		return prometheus.NewInvalidMetric(d.prom, err)
	}
	m, err := prometheus.NewConstHistogram(d.prom, count, sum, buckets, values...)
	if err != nil {
		return prometheus.NewInvalidMetric(d.prom, err)
	}
	return m
}

// labelValues checks the number of values and makes them valid UTF-8 (in
// a copy: never the caller's slice).
func (d *Desc) labelValues(values []string) ([]string, error) {
	if len(values) != len(d.Labels) {
		return nil, fmt.Errorf("%s: %d label values for %d labels", d.Name, len(values), len(d.Labels))
	}
	for i, lv := range values {
		if s := validUTF8(lv); s != lv {
			values = slices.Clone(values)
			values[i] = s
		}
	}
	return values, nil
}

// Gauge is Metric for a gauge.
func (d *Desc) Gauge(v float64, values ...string) prometheus.Metric {
	return d.Metric(prometheus.GaugeValue, v, values...)
}

// Counter is Metric for a counter.
func (d *Desc) Counter(v float64, values ...string) prometheus.Metric {
	return d.Metric(prometheus.CounterValue, v, values...)
}

// DescsOf returns every *Desc field of a descriptor struct (and of the
// structs it holds), so a collector lists its metrics for docs/metrics.md
// without repeating them.
func DescsOf(v any) []*Desc {
	rv := reflect.ValueOf(v)
	if rv.Kind() == reflect.Pointer {
		rv = rv.Elem()
	}
	var out []*Desc
	descType := reflect.TypeOf((*Desc)(nil))
	for i := 0; i < rv.NumField(); i++ {
		f := rv.Field(i)
		switch {
		case f.Type() == descType && !f.IsNil():
			out = append(out, (*Desc)(f.UnsafePointer()))
		case f.Kind() == reflect.Struct:
			out = append(out, DescsOf(f.Interface())...)
		}
	}
	return out
}

// CPUCoreDesc is slurm_job_cpu_core_seconds_total: one name, one HELP,
// whichever collector (cgroup or ebpf) provides the series on this node.
func CPUCoreDesc() *Desc {
	return NewJobDesc("slurm_job_cpu_core_seconds_total",
		"CPU time of the job per core: the ebpf collector's sched_switch accounting while it is loaded (v1 and v2), else v1 cpuacct.usage_percpu for the allocated cores. One source per node.", "core")
}
