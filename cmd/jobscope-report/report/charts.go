// SPDX-License-Identifier: Apache-2.0

package report

import (
	"context"
	"fmt"
	"sort"
	"time"

	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	"golang.org/x/sync/errgroup"
)

// chartPoints is about how many points a chart gets: enough for a phone's
// width, few enough for a small page.
const chartPoints = 240

// maxGPULines: jobs with more GPUs get one line, their mean.
const maxGPULines = 8

type chartSpec struct {
	id, title, unit string
	query           string
	scale           float64
	name            func(model.Metric) string
	ref             *Reference
}

// charts draws CPU cores in use, memory and GPU utilisation over the part
// of the job Prometheus has samples of.
func (r *runner) charts(ctx context.Context, rep *Report, s scope, interval time.Duration) ([]Chart, error) {
	from := rep.Job.FirstSample
	to := rep.Job.LastSample
	step := to.Sub(from) / chartPoints
	if step < interval {
		step = interval
	}
	if step < time.Second {
		step = time.Second
	}
	step = step.Round(time.Second)
	// rate() needs at least two samples in its window.
	rw := 2 * step
	if rw < 3*interval {
		rw = 3 * interval
	}
	total := func(model.Metric) string { return "job" }
	specs := []chartSpec{
		{id: "cpu", title: "CPU cores in use", unit: "cores", scale: 1, name: total,
			query: "sum(" + s.agg("max", "rate("+s.sel(mCPUUsage)+"["+promDur(rw)+"])") + ")",
			ref:   &Reference{Name: "allocated", Value: rep.CPU.Cores}},
		{id: "memory", title: "Memory", unit: "bytes", scale: 1, name: total,
			query: "sum(" + s.agg("max", s.sel(mMemUsage)) + ")"},
	}
	if rep.Memory.RequestedBytes != nil {
		specs[1].ref = &Reference{Name: "requested", Value: *rep.Memory.RequestedBytes}
	}
	if n := rep.GPU.Count; n > 0 {
		g := chartSpec{id: "gpu", title: "GPU utilization", unit: "%", scale: 100,
			query: s.agg("max", s.sel(mGPUUtil), gpuLabels...), ref: &Reference{Name: "full", Value: 100},
			name: func(m model.Metric) string {
				label := "GPU " + string(m["gpu"])
				if mig := string(m["mig_uuid"]); mig != "" {
					label += " " + mig
				}
				if len(rep.Job.Nodes) > 1 {
					label = string(m[model.LabelName(s.node)]) + " " + label
				}
				return label
			}}
		if n > maxGPULines {
			g.query = "avg(" + g.query + ")"
			g.name = func(model.Metric) string { return fmt.Sprintf("mean of %d GPUs", n) }
		}
		specs = append(specs, g)
	}
	out := make([]Chart, len(specs))
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(parallel)
	for i, sp := range specs {
		g.Go(func() error {
			m, err := r.prom.rangeQuery(ctx, sp.query, v1.Range{Start: from, End: to, Step: step})
			if err != nil {
				return err
			}
			out[i] = toChart(sp, m)
			return nil
		})
	}
	return out, g.Wait()
}

func toChart(sp chartSpec, m model.Matrix) Chart {
	c := Chart{ID: sp.id, Title: sp.title, Unit: sp.unit, Reference: sp.ref, Series: []ChartSeries{}}
	for _, ss := range m {
		cs := ChartSeries{Name: sp.name(ss.Metric), Points: make([][2]float64, 0, len(ss.Values))}
		for _, p := range ss.Values {
			cs.Points = append(cs.Points, [2]float64{float64(p.Timestamp) / 1000, float64(p.Value) * sp.scale})
		}
		c.Series = append(c.Series, cs)
	}
	sort.Slice(c.Series, func(i, j int) bool { return c.Series[i].Name < c.Series[j].Name })
	return c
}
