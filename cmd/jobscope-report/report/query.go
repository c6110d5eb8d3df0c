// SPDX-License-Identifier: Apache-2.0

package report

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/common/model"
	"golang.org/x/sync/errgroup"
)

// parallel is how many queries one report runs at once: enough to hide
// round trips, few enough not to load a shared Prometheus.
const parallel = 4

// scope is what every figure query of one job shares: the job's series on
// its nodes, over its whole life, evaluated at its last sample.
type scope struct {
	id    string
	node  string // node label name
	nodes []string
	at    time.Time
	win   string // range selector, e.g. "[3600s]"
	step  string // subquery resolution, e.g. "30s"
}

func newScope(id, nodeLabel string, nodes []string, from, at time.Time, interval time.Duration) scope {
	span := at.Sub(from) + time.Second
	step := interval
	if step < time.Second {
		step = time.Second
	}
	// Subqueries over long jobs stay under ~5000 steps.
	if least := span / 5000; step < least {
		step = least
	}
	return scope{id: id, node: nodeLabel, nodes: nodes, at: at, win: "[" + promDur(span) + "]", step: promDur(step)}
}

// sel is the job's selector for metric on its nodes; extra are label=value
// pairs (label=~"re" when the value starts with "~").
func (s scope) sel(metric string, extra ...string) string {
	eq := map[string]string{lJobID: s.id}
	var res []string
	for i := 0; i+1 < len(extra); i += 2 {
		if v, ok := strings.CutPrefix(extra[i+1], "~"); ok {
			res = append(res, extra[i]+"=~"+strconv.Quote(v))
		} else {
			eq[extra[i]] = extra[i+1]
		}
	}
	q := sel(metric, eq, s.node, nodeRegex(s.nodes))
	if len(res) > 0 {
		q = strings.TrimSuffix(q, "}") + "," + strings.Join(res, ",") + "}"
	}
	return q
}

// over is fn over the job's whole window: max_over_time(sel[win]).
func (s scope) over(fn, metric string, extra ...string) string {
	return fn + "(" + s.sel(metric, extra...) + s.win + ")"
}

// agg aggregates inner per node plus the given labels.
func (s scope) agg(agg, inner string, labels ...string) string {
	return agg + " by (" + strings.Join(append([]string{s.node}, labels...), ", ") + ") (" + inner + ")"
}

// subquery is inner over the job's window at the scope's resolution.
func (s scope) subquery(fn, inner string) string {
	return fn + "((" + inner + ")" + strings.TrimSuffix(s.win, "]") + ":" + s.step + "])"
}

// maxOfSum is the largest per-node sum over label at any sample: the most
// processes the job had, whatever their states (one value per state, so a
// job's series under two label sets count once).
func (s scope) maxOfSum(metric, label string) string {
	return s.agg("max", s.subquery("max_over_time", s.agg("sum", s.agg("max", s.sel(metric), label))))
}

func nodeRegex(nodes []string) string {
	q := make([]string, len(nodes))
	for i, n := range nodes {
		q[i] = regexp.QuoteMeta(n)
	}
	return strings.Join(q, "|")
}

// vectors runs named instant queries at one time, a few at once.
func (r *runner) vectors(ctx context.Context, at time.Time, qs map[string]string) (map[string]model.Vector, error) {
	var mu sync.Mutex
	out := make(map[string]model.Vector, len(qs))
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(parallel)
	for name, q := range qs {
		g.Go(func() error {
			v, err := r.prom.vector(ctx, q, at)
			if err != nil {
				return err
			}
			mu.Lock()
			out[name] = v
			mu.Unlock()
			return nil
		})
	}
	return out, g.Wait()
}

// perNode maps a vector aggregated by the node label to node -> value.
func perNode(v model.Vector, node string) map[string]float64 {
	out := map[string]float64{}
	for _, s := range v {
		out[string(s.Metric[model.LabelName(node)])] += float64(s.Value)
	}
	return out
}

// perNodeLabel maps a vector aggregated by node and one label.
func perNodeLabel(v model.Vector, node, label string) map[string]map[string]float64 {
	out := map[string]map[string]float64{}
	for _, s := range v {
		n := string(s.Metric[model.LabelName(node)])
		if out[n] == nil {
			out[n] = map[string]float64{}
		}
		out[n][string(s.Metric[model.LabelName(label)])] += float64(s.Value)
	}
	return out
}

// total sums a per-node map; nil when Prometheus had no series.
func total(m map[string]float64) *float64 {
	if len(m) == 0 {
		return nil
	}
	var t float64
	for _, v := range m {
		t += v
	}
	return &t
}

// labelTotal sums one label value over nodes; nil when no node has it.
func labelTotal(m map[string]map[string]float64, value string) *float64 {
	var t float64
	seen := false
	for _, byLabel := range m {
		if v, ok := byLabel[value]; ok {
			t, seen = t+v, true
		}
	}
	if !seen {
		return nil
	}
	return &t
}

func maxOf(m map[string]float64) *float64 {
	var best *float64
	for _, v := range m {
		if best == nil || v > *best {
			best = ptr(v)
		}
	}
	return best
}

func get(m map[string]float64, k string) *float64 {
	if v, ok := m[k]; ok {
		return &v
	}
	return nil
}
