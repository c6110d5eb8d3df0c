// SPDX-License-Identifier: Apache-2.0

package report

import (
	_ "embed"
	"html/template"
	"io"
	"strings"
	"time"
)

//go:embed page.html.tmpl
var pageTemplate string

var page = template.Must(template.New("page").Funcs(template.FuncMap{
	"upper": strings.ToUpper, "pctOr": pctOr, "bytesOr": bytesOr, "numOr": numOr, "num": num,
}).Parse(pageTemplate))

type card struct{ Title, Value, Detail, Class string }

type htmlChart struct {
	Title string
	SVG   template.HTML
}

type pageData struct {
	R         *Report
	Title     string
	Meta      []string
	Times     []string
	Cards     []card
	Facts     []fact
	Charts    []htmlChart
	Generated string
}

// WriteHTML renders the report as one self-contained page: inline CSS,
// charts as inline SVG drawn by gonum/plot, no script, nothing fetched.
func WriteHTML(w io.Writer, rep *Report, loc *time.Location) error {
	j := rep.Job
	d := pageData{R: rep, Title: "Job " + j.ID, Facts: figureFacts(rep), Times: timeLine(j, loc),
		Generated: when(rep.GeneratedAt, loc)}
	if j.Name != "" {
		d.Title += " “" + j.Name + "”"
	}
	d.Meta = nonEmpty([]string{"user " + orDash(j.User), "account " + orDash(j.Account),
		"partition " + orDash(j.Partition), opt("cluster ", j.Cluster), j.State,
		plural(float64(len(j.Nodes)), "one", "node", "nodes") + ": " + strings.Join(j.Nodes, ", ")})
	d.Cards = cards(rep)
	for _, c := range rep.Charts {
		svg, err := chartSVG(c, loc)
		if err != nil {
			return err
		}
		d.Charts = append(d.Charts, htmlChart{Title: c.Title, SVG: template.HTML(svg)})
	}
	return page.Execute(w, d)
}

// cards are the headline figures, coloured by the warnings they raise.
func cards(rep *Report) []card {
	worst := map[string]string{}
	for _, w := range rep.Warnings {
		area := strings.SplitN(w.ID, "_", 2)[0]
		if cur, ok := worst[area]; !ok || severityRank[w.Severity] < severityRank[cur] {
			worst[area] = w.Severity
		}
	}
	class := func(area string) string {
		if s, ok := worst[area]; ok {
			return s
		}
		return "ok"
	}
	out := []card{{Title: "CPU efficiency", Value: pctOr(rep.CPU.Efficiency), Class: class("cpu"),
		Detail: num(deref(rep.CPU.CoresInUse)) + " of " + num(rep.CPU.Cores) + " cores in use"}}
	mem := card{Title: "Memory peak", Value: pctOr(rep.Memory.PeakRatio), Class: class("memory"),
		Detail: bytesOr(rep.Memory.PeakBytes) + " of " + bytesOr(rep.Memory.RequestedBytes)}
	if k := deref(rep.Memory.OOMKills); k > 0 {
		mem.Detail += ", " + plural(k, "one", "OOM kill", "OOM kills")
	}
	out = append(out, mem)
	if rep.GPU.Count > 0 {
		out = append(out, card{Title: "GPU busy", Value: pctOr(rep.GPU.UtilizationMean), Class: class("gpu"),
			Detail: plural(float64(rep.GPU.Count), "one", "GPU", "GPUs") + ", " + num(float64(rep.GPU.IdleCount)) + " idle"})
	}
	if e := rep.Energy; e.KWh != nil {
		c := card{Title: "Energy", Value: num(*e.KWh) + " kWh", Class: "ok"}
		if e.EmissionsGrams != nil {
			c.Detail = num(*e.EmissionsGrams) + " gCO2e"
		}
		out = append(out, c)
	}
	return out
}
