// SPDX-License-Identifier: Apache-2.0

package report

import (
	"bytes"
	"image/color"
	"math"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Line colours: each chart's first line has its own, so a screenshot test
// can find each chart's pixels; none is used anywhere else on the page.
var (
	chartColor = map[string]color.RGBA{
		"cpu":    {R: 0x1f, G: 0x77, B: 0xb4, A: 0xff},
		"memory": {R: 0xd9, G: 0x5f, B: 0x02, A: 0xff},
		"gpu":    {R: 0x1b, G: 0x9e, B: 0x77, A: 0xff},
	}
	morePalette = []color.RGBA{
		{R: 0x75, G: 0x70, B: 0xb3, A: 0xff}, {R: 0xe7, G: 0x29, B: 0x8a, A: 0xff},
		{R: 0x66, G: 0xa6, B: 0x1e, A: 0xff}, {R: 0xe6, G: 0xab, B: 0x02, A: 0xff},
		{R: 0xa6, G: 0x76, B: 0x1d, A: 0xff}, {R: 0x99, G: 0x99, B: 0x99, A: 0xff},
		{R: 0x8c, G: 0x2d, B: 0x04, A: 0xff},
	}
	refColor = color.RGBA{R: 0x55, G: 0x55, B: 0x55, A: 0xff}
)

var sansFont = font.Font{Typeface: "Liberation", Variant: "Sans"}

// Chart size: narrow enough that text stays readable when a phone scales
// the SVG down, with a strip on the right for the legend.
const (
	chartWidth  = 4.6 * vg.Inch
	chartHeight = 2.4 * vg.Inch
	legendWidth = 1.1 * vg.Inch
)

// chartSVG draws one chart as SVG with gonum/plot, for inlining in HTML.
func chartSVG(c Chart, loc *time.Location) ([]byte, error) {
	p := plot.New()
	setFonts(p)
	p.Title.Text = c.Title
	p.X.Tick.Marker = timeTicks{loc: loc}
	scale, unit := axisUnit(c)
	p.Y.Label.Text = unit
	p.Add(plotter.NewGrid())
	leg := plot.NewLegend()
	leg.TextStyle.Font = font.From(sansFont, 9)
	leg.Top, leg.Left, leg.ThumbnailWidth = true, true, vg.Points(14)
	empty := true
	xmin, xmax, ymax := math.Inf(1), math.Inf(-1), 0.0
	for i, s := range c.Series {
		if len(s.Points) == 0 {
			continue
		}
		xy := make(plotter.XYs, len(s.Points))
		for k, pt := range s.Points {
			xy[k].X, xy[k].Y = pt[0], pt[1]/scale
			xmin, xmax, ymax = math.Min(xmin, pt[0]), math.Max(xmax, pt[0]), math.Max(ymax, xy[k].Y)
		}
		l, err := plotter.NewLine(xy)
		if err != nil {
			return nil, err
		}
		l.Color = seriesColor(c.ID, i)
		l.Width = vg.Points(1.8)
		p.Add(l)
		leg.Add(clip(s.Name, 14), l)
		empty = false
	}
	if empty {
		p.Title.Text += " (no samples)"
	}
	if ref := c.Reference; ref != nil && !empty && ref.Value > 0 {
		y := ref.Value / scale
		l, err := plotter.NewLine(plotter.XYs{{X: xmin, Y: y}, {X: xmax, Y: y}})
		if err != nil {
			return nil, err
		}
		l.Color, l.Width = refColor, vg.Points(1)
		l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		p.Add(l)
		leg.Add(ref.Name, l)
		ymax = math.Max(ymax, y)
	}
	// Headroom above the highest line or the request.
	p.Y.Min, p.Y.Max = 0, math.Max(ymax*1.1, 1e-9)
	canvas := vgsvg.New(chartWidth, chartHeight)
	dc := draw.New(canvas)
	p.Draw(draw.Crop(dc, 0, -legendWidth, 0, 0))
	leg.Draw(draw.Crop(draw.Crop(dc, chartWidth-legendWidth+vg.Points(6), 0, 0, 0), 0, 0, 0, -vg.Points(20)))
	var b bytes.Buffer
	if _, err := canvas.WriteTo(&b); err != nil {
		return nil, err
	}
	// Inline SVG in HTML takes no XML declaration.
	out := b.String()
	if i := strings.Index(out, "<svg"); i > 0 {
		out = out[i:]
	}
	return []byte(out), nil
}

func seriesColor(id string, i int) color.RGBA {
	if i == 0 {
		if c, ok := chartColor[id]; ok {
			return c
		}
	}
	return morePalette[i%len(morePalette)]
}

func setFonts(p *plot.Plot) {
	p.Title.TextStyle.Font = font.From(sansFont, 12)
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		a.Label.TextStyle.Font = font.From(sansFont, 10)
		a.Tick.Label.Font = font.From(sansFont, 9.5)
	}
}

// timeTicks puts ticks on round clock times (every 1, 5, 15 minutes, ...,
// a day) so that about five fall in the chart, labelled in loc.
type timeTicks struct{ loc *time.Location }

var tickSteps = []time.Duration{10 * time.Second, 30 * time.Second, time.Minute, 2 * time.Minute,
	5 * time.Minute, 10 * time.Minute, 15 * time.Minute, 30 * time.Minute, time.Hour, 2 * time.Hour,
	3 * time.Hour, 6 * time.Hour, 12 * time.Hour, 24 * time.Hour, 48 * time.Hour, 7 * 24 * time.Hour}

func (tt timeTicks) Ticks(lo, hi float64) []plot.Tick {
	if !(hi > lo) {
		return nil
	}
	step := tickSteps[len(tickSteps)-1]
	for _, s := range tickSteps {
		if (hi-lo)/s.Seconds() <= 5 {
			step = s
			break
		}
	}
	format := "15:04"
	switch {
	case step < time.Minute:
		format = "15:04:05"
	case step >= 24*time.Hour:
		format = "Jan 2"
	case hi-lo > 86400:
		format = "Jan 2 15:04"
	}
	// Align to whole steps in the report's zone (days start at midnight).
	_, offset := time.Unix(int64(lo), 0).In(tt.loc).Zone()
	sec := step.Seconds()
	first := math.Ceil((lo+float64(offset))/sec)*sec - float64(offset)
	var ticks []plot.Tick
	for v := first; v <= hi; v += sec {
		ticks = append(ticks, plot.Tick{Value: v, Label: time.Unix(int64(v), 0).In(tt.loc).Format(format)})
		for m := 1; m < 4 && v+float64(m)*sec/4 <= hi; m++ {
			ticks = append(ticks, plot.Tick{Value: v + float64(m)*sec/4})
		}
	}
	return ticks
}

// axisUnit picks a readable unit for a chart's values.
func axisUnit(c Chart) (scale float64, label string) {
	if c.Unit != "bytes" {
		return 1, c.Unit
	}
	top := 0.0
	for _, s := range c.Series {
		for _, pt := range s.Points {
			top = math.Max(top, pt[1])
		}
	}
	if c.Reference != nil {
		top = math.Max(top, c.Reference.Value)
	}
	for _, u := range []struct {
		s float64
		n string
	}{{1 << 40, "TiB"}, {1 << 30, "GiB"}, {1 << 20, "MiB"}, {1 << 10, "KiB"}} {
		if top >= u.s {
			return u.s, u.n
		}
	}
	return 1, "bytes"
}
