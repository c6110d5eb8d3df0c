// SPDX-License-Identifier: Apache-2.0

package collector

import (
	"slices"

	"github.com/prometheus/client_golang/prometheus"
)

// Out sends one collector's series at its --metrics.level. The level of a
// series is its descriptor's (Full, Partly with BasicOnly), so that one
// declaration decides what docs/metrics.md says and what is sent: a
// collector sends through Out and never compares levels itself.
type Out struct {
	ch    chan<- prometheus.Metric
	level Level
}

// NewOut sends to ch what level emits.
func NewOut(ch chan<- prometheus.Metric, level Level) Out { return Out{ch: ch, level: level} }

// Emits reports whether the level emits any series of d: a collector skips
// reading what only d's series need.
func (o Out) Emits(d *Desc) bool { return o.level.Emits(d) }

// Keeps reports whether the level emits d's series with the label values
// extra (after the job labels, for a per-job descriptor).
func (o Out) Keeps(d *Desc, extra ...string) bool {
	switch {
	case o.level >= LevelFull:
		return true
	case d.level > o.level:
		return false
	case !d.basicOnly:
		return true
	}
	i := d.basicLabel
	if d.job {
		i -= len(d.Labels) - len(d.Extra())
	}
	return i >= 0 && i < len(extra) && slices.Contains(d.basicValues, extra[i])
}

// Whole reports whether the level emits every series of d, not only the
// basic part of a Partly family whose basic series the collector computes
// differently (sums over devices, say).
func (o Out) Whole(d *Desc) bool { return o.level >= LevelFull || d.basicPart == "" }

// Job sends a series of job series js if the level keeps it.
func (o Out) Job(js *JobSeries, d *Desc, t prometheus.ValueType, v float64, extra ...string) {
	if o.Keeps(d, extra...) {
		o.ch <- js.Metric(d, t, v, extra...)
	}
}

// Gauge is Job for a gauge.
func (o Out) Gauge(js *JobSeries, d *Desc, v float64, extra ...string) {
	o.Job(js, d, prometheus.GaugeValue, v, extra...)
}

// Counter is Job for a counter.
func (o Out) Counter(js *JobSeries, d *Desc, v float64, extra ...string) {
	o.Job(js, d, prometheus.CounterValue, v, extra...)
}
