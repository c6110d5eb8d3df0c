package collector

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
)

var descRe = regexp.MustCompile(`fqName: "([^"]*)", help: "((?:[^"\\]|\\.)*)", unit: "[^"]*", constLabels: \{[^}]*\}, variableLabels: \{([^}]*)\}`)

// MetricsDoc renders docs/metrics.md from the collectors' descriptors.
func MetricsDoc(factories []Factory) string {
	var b strings.Builder
	b.WriteString("# jobscope metrics\n\n")
	b.WriteString("Generated from the code by `make docs` (`go test ./collector/registry/ -run TestMetricsDoc -update`); a test fails when it is stale.\n")
	b.WriteString("Every per-job series carries `jobid`, `user`, `account`; `slurm_job_info` carries the rest of the job's metadata.\n\n")
	section(&b, "exporter (always on)", "", frameworkDescs())
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

func section(b *strings.Builder, title, help string, descs []*prometheus.Desc) {
	fmt.Fprintf(b, "## %s\n\n", title)
	if help != "" {
		fmt.Fprintf(b, "%s.\n\n", help)
	}
	b.WriteString("| metric | labels | description |\n|---|---|---|\n")
	type row struct{ name, labels, help string }
	var rows []row
	for _, d := range descs {
		m := descRe.FindStringSubmatch(d.String())
		if m == nil {
			continue
		}
		labels := strings.ReplaceAll(m[3], ",", ", ")
		help := strings.ReplaceAll(strings.ReplaceAll(m[2], `\"`, `"`), "|", `\|`)
		rows = append(rows, row{m[1], labels, help})
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].name < rows[j].name })
	for _, r := range rows {
		fmt.Fprintf(b, "| `%s` | %s | %s |\n", r.name, r.labels, r.help)
	}
	b.WriteString("\n")
}

// ExtraLabelNames returns a per-job descriptor's label names after jobid,
// user and account.
func ExtraLabelNames(d *prometheus.Desc) []string {
	m := descRe.FindStringSubmatch(d.String())
	if m == nil || m[3] == "" {
		return nil
	}
	names := strings.Split(m[3], ",")
	if len(names) <= len(jobLabelNames) {
		return nil
	}
	return names[len(jobLabelNames):]
}
