// SPDX-License-Identifier: Apache-2.0

package collector

import (
	"crypto/sha256"
	"encoding/hex"
	"log/slog"
	"sort"
	"sync"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// Label values come from many sources a job's user writes (job name,
// user and account from the environment hint, executable paths, device and
// mount names), and a long one costs in every series that carries it, in
// every scrape, and in Prometheus' index for the series' life. So every
// series of a collection passes here once, after the collectors and before
// any scrape sees it: one place that bounds every label of every source,
// including sources added later.

// LabelValueMax is the most bytes an exported label value has: room for
// any user, account, partition or job name a site would choose and for
// most executable paths, while a job's ~60 series with every job label at
// the cap cost the answer a few KB, not megabytes.
const LabelValueMax = 128

// cutHashHex is how many hex digits of the value's SHA-256 end a cut
// value: two long values with one prefix (paths that differ at the end)
// stay two series.
const cutHashHex = 16

// cutMark separates a cut value's prefix from its hash.
const cutMark = "…"

// CutLabelValue returns v when it fits LabelValueMax, else its longest
// prefix that ends on a UTF-8 boundary and leaves room for cutMark and
// cutHashHex hex digits of SHA-256(v).
func CutLabelValue(v string) string {
	if len(v) <= LabelValueMax {
		return v
	}
	i := LabelValueMax - len(cutMark) - cutHashHex
	for i > 0 && !utf8.RuneStart(v[i]) {
		i--
	}
	sum := sha256.Sum256([]byte(v))
	return v[:i] + cutMark + hex.EncodeToString(sum[:cutHashHex/2])
}

// labelCaps cuts over-long label values and counts them by label name.
type labelCaps struct {
	log  *slog.Logger
	desc *Desc

	mu  sync.Mutex
	cut map[string]float64
}

func newLabelCaps(log *slog.Logger) *labelCaps {
	return &labelCaps{log: log, cut: map[string]float64{},
		desc: NewDesc("jobscope_label_values_cut_total",
			"Label values longer than 128 bytes cut in exported series (to a prefix, \"…\" and 16 hex digits of the value's SHA-256), by label name; each series counts once per collection. The first of each label name is logged.",
			"label")}
}

// apply cuts over-long label values in ms, in place: each series with one
// is replaced by a copy whose labels are cut (the original may be shared
// with nothing else yet, but its pairs may be: they are never written).
// It runs before the collection is handed to any scrape.
func (c *labelCaps) apply(ms []prometheus.Metric) {
	var scratch dto.Metric
	var cutPairs map[*dto.LabelPair]*dto.LabelPair // one cut per pair and collection
	counts := map[string]int{}
	for i, m := range ms {
		fm, fast := m.(*fastMetric)
		var labels []*dto.LabelPair
		if fast {
			labels = fm.labels
		} else {
			scratch.Reset()
			if m.Write(&scratch) != nil {
				continue // an invalid series fails at gather time anyway
			}
			labels = scratch.Label
		}
		if !anyLong(labels) {
			continue
		}
		if cutPairs == nil {
			cutPairs = map[*dto.LabelPair]*dto.LabelPair{}
		}
		capped := make([]*dto.LabelPair, len(labels))
		for j, p := range labels {
			if len(p.GetValue()) <= LabelValueMax {
				capped[j] = p
				continue
			}
			q := cutPairs[p]
			if q == nil {
				v := CutLabelValue(p.GetValue())
				q = &dto.LabelPair{Name: p.Name, Value: &v}
				cutPairs[p] = q
			}
			capped[j] = q
			counts[p.GetName()]++
		}
		if fast {
			ms[i] = fm.withLabels(capped)
		} else {
			ms[i] = cutMetric{Metric: m, labels: capped}
		}
	}
	if len(counts) == 0 {
		return
	}
	var first []string
	c.mu.Lock()
	for name, n := range counts {
		if c.cut[name] == 0 {
			first = append(first, name)
		}
		c.cut[name] += float64(n)
	}
	c.mu.Unlock()
	if c.log != nil {
		sort.Strings(first)
		for _, name := range first {
			c.log.Warn("label values cut (logged once per label)", "label", name, "max_bytes", LabelValueMax, "series", counts[name])
		}
	}
}

func anyLong(labels []*dto.LabelPair) bool {
	for _, p := range labels {
		if len(p.GetValue()) > LabelValueMax {
			return true
		}
	}
	return false
}

// metrics returns the counter's series.
func (c *labelCaps) metrics() []prometheus.Metric {
	c.mu.Lock()
	defer c.mu.Unlock()
	names := make([]string, 0, len(c.cut))
	for name := range c.cut {
		names = append(names, name)
	}
	sort.Strings(names)
	out := make([]prometheus.Metric, 0, len(names))
	for _, name := range names {
		out = append(out, c.desc.Counter(c.cut[name], name))
	}
	return out
}

// cutMetric is a series whose labels were cut; like fastMetric, its Write
// writes nothing of its own.
type cutMetric struct {
	prometheus.Metric
	labels []*dto.LabelPair
}

func (m cutMetric) Write(out *dto.Metric) error {
	if err := m.Metric.Write(out); err != nil {
		return err
	}
	out.Label = m.labels
	return nil
}
