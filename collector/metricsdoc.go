// SPDX-License-Identifier: Apache-2.0

package collector

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// MetricsDoc renders docs/metrics.md from the collectors' descriptors.
func MetricsDoc(factories []Factory) string {
	var b strings.Builder
	b.WriteString("# jobscope metrics\n\n")
	b.WriteString("Generated from the code by `make docs` (`go test ./collector/registry/ -run TestMetricsDoc -update`); a test fails when it is stale.\n")
	b.WriteString("Every per-job series carries `jobid`, `user`, `account`; `slurm_job_info` carries the rest of the job's metadata.\n")
	b.WriteString("The level column says which `--metrics.level` emits a metric: basic (the default, within the budget of docs/cardinality.md) or full; \"basic: ...\" means basic emits only the series named and full all of them.\n\n")
	section(&b, "exporter (always on)", "", FrameworkDescs())
	for _, f := range factories {
		if f.Descs == nil {
			continue
		}
		modes := []string{}
		for _, m := range f.DefaultIn {
			modes = append(modes, string(m))
		}
		def := "off by default"
		if len(modes) > 0 {
			def = "on by default in " + strings.Join(modes, ", ") + " mode"
		}
		section(&b, "`"+f.Name+"` collector ("+def+", `--collector."+f.Name+"`)", f.Help, f.Descs())
	}
	return b.String()
}

func section(b *strings.Builder, title, help string, descs []*Desc) {
	fmt.Fprintf(b, "## %s\n\n", title)
	if help != "" {
		fmt.Fprintf(b, "%s.\n\n", help)
	}
	b.WriteString("| metric | labels | level | description |\n|---|---|---|---|\n")
	rows := slices.Clone(descs)
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].Name < rows[j].Name })
	for _, d := range rows {
		fmt.Fprintf(b, "| `%s` | %s | %s | %s |\n", d.Name, strings.Join(d.Labels, ", "), d.LevelDoc(), strings.ReplaceAll(d.Help, "|", `\|`))
	}
	b.WriteString("\n")
}

// FrameworkDescs are the metrics the exporter itself emits.
func FrameworkDescs() []*Desc {
	e := NewExporter(nil, Options{})
	dd := e.discoveryDescs
	return []*Desc{e.durationDesc, e.successDesc, e.buildDesc, e.jobsDesc, NewProblems(nil).desc, e.caps.desc,
		dd.dirs, dd.skipped, dd.squeueUp, dd.squeueRuns, dd.squeueErrors}
}
