// SPDX-License-Identifier: Apache-2.0

package collector

import (
	"log/slog"
	"sort"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// Problems counts bad input by collector and cause, and logs each cause
// once, so a broken file gives one log line and a growing counter, not a
// line per scrape.
type Problems struct {
	log    *slog.Logger
	mu     sync.Mutex
	counts map[[2]string]float64
	desc   *Desc
}

// NewProblems builds an empty problem log.
func NewProblems(log *slog.Logger) *Problems {
	return &Problems{
		log:    log,
		counts: map[[2]string]float64{},
		desc: NewDesc("jobscope_collector_errors_total",
			"Bad or missing input met by a collector since start, by cause (each cause is logged once).",
			"collector", "cause"),
	}
}

// Report counts one occurrence and logs the first.
func (p *Problems) Report(collector, cause string, err error) {
	if p == nil {
		return
	}
	k := [2]string{collector, cause}
	p.mu.Lock()
	first := p.counts[k] == 0
	p.counts[k]++
	p.mu.Unlock()
	if first && p.log != nil {
		p.log.Warn("collector problem (logged once per cause)", "collector", collector, "cause", cause, "err", err)
	}
}

// ReportLogged counts one occurrence of a cause that was logged elsewhere
// already (a collector that could not start is logged when it is built).
func (p *Problems) ReportLogged(collector, cause string) {
	if p == nil {
		return
	}
	p.mu.Lock()
	p.counts[[2]string{collector, cause}]++
	p.mu.Unlock()
}

// Count returns how often a cause was reported (for tests).
func (p *Problems) Count(collector, cause string) float64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.counts[[2]string{collector, cause}]
}

func (p *Problems) collect(ch chan<- prometheus.Metric) {
	p.mu.Lock()
	keys := make([][2]string, 0, len(p.counts))
	for k := range p.counts {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(a, b int) bool {
		if keys[a][0] != keys[b][0] {
			return keys[a][0] < keys[b][0]
		}
		return keys[a][1] < keys[b][1]
	})
	vals := make([]float64, len(keys))
	for i, k := range keys {
		vals[i] = p.counts[k]
	}
	p.mu.Unlock()
	for i, k := range keys {
		ch <- p.desc.Counter(vals[i], k[0], k[1])
	}
}
