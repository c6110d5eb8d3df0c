// SPDX-License-Identifier: Apache-2.0

// Package contrib holds no Go code: its tests check the deployment kit
// (Prometheus rules, Grafana dashboard, systemd units, Slurm prolog/epilog)
// against the exporter's real output, so a renamed metric breaks the build
// instead of a site's dashboards.
package contrib

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/jobscope/jobscope/internal/testutil"
)

// goldenMetrics returns every metric name in the exporter's golden outputs.
func goldenMetrics(t *testing.T) map[string]bool { return testutil.GoldenMetricNames(t, "../testdata") }

var (
	quoted = regexp.MustCompile(`"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|` + "`[^`]*`")
	ident  = regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*`)
)

// exprNames returns the jobscope metric names (slurm_*, jobscope_*) and the
// recording-rule names (level:metric:operations) a PromQL expression reads.
// String literals are dropped first, so label values never count.
func exprNames(expr string) (metrics, recorded []string) {
	for _, id := range ident.FindAllString(quoted.ReplaceAllString(expr, `""`), -1) {
		switch {
		case strings.Count(id, ":") >= 2:
			recorded = append(recorded, id)
		case strings.HasPrefix(id, "slurm_") || strings.HasPrefix(id, "jobscope_"):
			metrics = append(metrics, id)
		}
	}
	return metrics, recorded
}

// rule is what the tests read of a Prometheus rule; promtool checks the
// full YAML syntax. comment is the block of # lines right above it.
type rule struct{ record, alert, expr, comment string }

// readRules extracts record/alert names and expressions from a rule file
// (block scalars `expr: |` included) without a YAML dependency.
func readRules(t *testing.T, path string) []rule {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var rules []rule
	var comment []string
	lines := strings.Split(string(b), "\n")
	for i := 0; i < len(lines); i++ {
		trim := strings.TrimSpace(lines[i])
		if c, ok := strings.CutPrefix(trim, "#"); ok {
			comment = append(comment, strings.TrimSpace(c))
			continue
		}
		above := strings.Join(comment, " ")
		comment = nil
		switch {
		case strings.HasPrefix(trim, "- record:"):
			rules = append(rules, rule{record: strings.TrimSpace(strings.TrimPrefix(trim, "- record:")), comment: above})
		case strings.HasPrefix(trim, "- alert:"):
			rules = append(rules, rule{alert: strings.TrimSpace(strings.TrimPrefix(trim, "- alert:")), comment: above})
		case strings.HasPrefix(trim, "expr:") && len(rules) > 0:
			v := strings.TrimSpace(strings.TrimPrefix(trim, "expr:"))
			if v == "|" || v == ">" {
				indent := -1
				var parts []string
				for i+1 < len(lines) {
					next := lines[i+1]
					n := len(next) - len(strings.TrimLeft(next, " "))
					if strings.TrimSpace(next) != "" && (indent >= 0 && n < indent || indent < 0 && n <= strings.Index(lines[i], "expr:")) {
						break
					}
					if indent < 0 && strings.TrimSpace(next) != "" {
						indent = n
					}
					parts = append(parts, next)
					i++
				}
				v = strings.Join(parts, "\n")
			}
			rules[len(rules)-1].expr = v
		}
	}
	return rules
}

func ruleFiles(t *testing.T) []string {
	files, err := filepath.Glob("prometheus/*rules*.yml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no rule files under contrib/prometheus: %v", err)
	}
	return files
}

func promtool(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("JOBSCOPE_REQUIRE_PROMTOOL") != "" {
			t.Fatal("promtool not found and JOBSCOPE_REQUIRE_PROMTOOL is set (apt-get install prometheus)")
		}
		t.Skip("promtool not installed (Debian: apt-get install prometheus); skipping its checks")
	}
	return p
}

func TestPromtoolCheckRules(t *testing.T) {
	p := promtool(t)
	args := append([]string{"check", "rules"}, ruleFiles(t)...)
	if out, err := exec.Command(p, args...).CombinedOutput(); err != nil {
		t.Fatalf("promtool check rules: %v\n%s", err, out)
	}
}

// TestPromtoolRuleTests runs the rule unit tests (prometheus/tests): the
// alerts fire on the series that should raise them, and only there.
func TestPromtoolRuleTests(t *testing.T) {
	p := promtool(t)
	tests, _ := filepath.Glob("prometheus/tests/*.yml")
	if len(tests) == 0 {
		t.Fatal("no rule tests under contrib/prometheus/tests")
	}
	if out, err := exec.Command(p, append([]string{"test", "rules"}, tests...)...).CombinedOutput(); err != nil {
		t.Fatalf("promtool test rules: %v\n%s", err, out)
	}
}

func TestPromtoolCheckConfig(t *testing.T) {
	p := promtool(t)
	// The example's file_sd path does not exist here: promtool only warns.
	if out, err := exec.Command(p, "check", "config", "prometheus/prometheus.yml").CombinedOutput(); err != nil {
		t.Fatalf("promtool check config: %v\n%s", err, out)
	}
}

// TestRulesUseRealMetrics: every metric a rule reads is one jobscope prints,
// and every recorded series a rule reads is recorded by a rule.
func TestRulesUseRealMetrics(t *testing.T) {
	golden := goldenMetrics(t)
	recorded := map[string]bool{}
	var all []rule
	for _, f := range ruleFiles(t) {
		rs := readRules(t, f)
		if len(rs) == 0 {
			t.Fatalf("%s: no rules read", f)
		}
		for _, r := range rs {
			if r.expr == "" {
				t.Errorf("%s: rule %s%s has no expr", f, r.record, r.alert)
			}
			if r.record != "" {
				recorded[r.record] = true
			}
		}
		all = append(all, rs...)
	}
	var alerts []string
	for _, r := range all {
		ms, recs := exprNames(r.expr)
		for _, m := range ms {
			if !golden[m] {
				t.Errorf("rule %s%s reads %s, which no golden output has", r.record, r.alert, m)
			}
		}
		for _, rec := range recs {
			if !recorded[rec] {
				t.Errorf("rule %s%s reads %s, which no recording rule records", r.record, r.alert, rec)
			}
		}
		if r.alert != "" {
			alerts = append(alerts, r.alert)
		}
	}
	// The alerts the deployment kit promises.
	for _, want := range []string{"SlurmJobLowCPUUsage", "SlurmJobMemoryNearLimit", "SlurmJobGPUIdle", "JobscopeDown",
		"SlurmNodeDrainedOrDown", "SlurmReservationStartsOnBusyNodes", "SlurmLicensePoolExhausted"} {
		if !slices.Contains(alerts, want) {
			t.Errorf("alert %s missing (have %v)", want, alerts)
		}
	}
}

// TestDashboardUsesRealMetrics: the Grafana dashboard is valid JSON, has
// per-job and per-node rows, and every metric it queries exists in the
// golden outputs (recorded series must come from the recording rules).
func TestDashboardUsesRealMetrics(t *testing.T) {
	golden := goldenMetrics(t)
	recorded := map[string]bool{}
	for _, f := range ruleFiles(t) {
		for _, r := range readRules(t, f) {
			if r.record != "" {
				recorded[r.record] = true
			}
		}
	}
	files, _ := filepath.Glob("grafana/*.json")
	if len(files) == 0 {
		t.Fatal("no dashboard under contrib/grafana")
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var dash map[string]any
		if err := json.Unmarshal(b, &dash); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if dash["uid"] == nil || dash["title"] == nil {
			t.Errorf("%s: uid or title missing", f)
		}
		var exprs, rows []string
		walk(dash, func(k string, v any) {
			s, ok := v.(string)
			if !ok {
				return
			}
			switch k {
			case "expr", "definition":
				exprs = append(exprs, s)
			case "title":
				rows = append(rows, s)
			}
		})
		for _, want := range []string{"Job", "Node", "Cluster nodes and queue wait"} {
			if !slices.Contains(rows, want) {
				t.Errorf("%s: no %q row", f, want)
			}
		}
		if len(exprs) < 10 {
			t.Fatalf("%s: only %d queries found", f, len(exprs))
		}
		seen := map[string]bool{}
		for _, e := range exprs {
			ms, recs := exprNames(e)
			for _, m := range ms {
				seen[m] = true
				if !golden[m] {
					t.Errorf("%s: query %q reads %s, which no golden output has", f, e, m)
				}
			}
			for _, r := range recs {
				if !recorded[r] {
					t.Errorf("%s: query %q reads %s, which no recording rule records", f, e, r)
				}
			}
		}
		names := make([]string, 0, len(seen))
		for m := range seen {
			names = append(names, m)
		}
		sort.Strings(names)
		t.Logf("%s: %d queries over %d metrics", f, len(exprs), len(names))
	}
}

func walk(v any, fn func(key string, v any)) {
	switch x := v.(type) {
	case map[string]any:
		for k, c := range x {
			fn(k, c)
			walk(c, fn)
		}
	case []any:
		for _, c := range x {
			walk(c, fn)
		}
	}
}

var (
	selector  = regexp.MustCompile(`(?:^|[^:a-zA-Z0-9_])((?:slurm|jobscope)_[a-zA-Z0-9_]+)\s*(?:\{([^}]*)\})?`)
	eqMatcher = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)\s*=\s*"([^"]*)"`)
)

// TestRulesUseBasicMetrics: what the shipped rules read is in the default
// output (--metrics.level=basic), equality label matchers included, so the
// alerts, the recorded series dashboards read and the job report's usage
// rules work without --metrics.level=full. A rule may select a full-level
// series only beside a basic selector of the same metric (an `or`
// fallback): per metric, at least one selector must match basic series.
// The exception is a rule whose comment says it needs --metrics.level=full
// (one whose series is absent at basic by design, as the jobstats rules'
// shmem): its selectors must then match the full-level goldens.
func TestRulesUseBasicMetrics(t *testing.T) {
	basic := newSelectable(t, testutil.BasicGoldens(t, "../testdata"))
	fullGoldens, _ := filepath.Glob("../testdata/*/*-full.golden")
	if len(fullGoldens) == 0 {
		t.Fatal("no full-level goldens under testdata")
	}
	full := newSelectable(t, fullGoldens)
	for _, f := range ruleFiles(t) {
		for _, r := range readRules(t, f) {
			level, emits := "basic", basic
			if strings.Contains(r.comment, fullLevelNote) {
				level, emits = "full", full
			}
			for name, ok := range emits.selects(r.expr) {
				if !ok {
					t.Errorf("%s: rule %s%s reads %s, which the %s level does not emit as selected", f, r.record, r.alert, name, level)
				}
			}
		}
	}
}

// selectable is what a set of golden outputs emits: metric names and
// their label pairs.
type selectable struct {
	names map[string]bool
	pairs map[[3]string]bool // metric, label, value
}

func newSelectable(t *testing.T, goldens []string) selectable {
	s := selectable{names: map[string]bool{}, pairs: map[[3]string]bool{}}
	for _, g := range goldens {
		for _, series := range testutil.GoldenSeries(t, g) {
			s.names[series.Name] = true
			for l, v := range series.Labels {
				s.pairs[[3]string{series.Name, l, v}] = true
			}
		}
	}
	return s
}

// selects says, per jobscope metric an expression reads, whether at least
// one of its selectors (with its equality matchers) matches emitted series.
func (s selectable) selects(expr string) map[string]bool {
	out := map[string]bool{}
	for _, m := range selector.FindAllStringSubmatch(quoted.ReplaceAllStringFunc(expr, keepLabelValues), -1) {
		name, ok := m[1], s.names[m[1]]
		for _, lm := range eqMatcher.FindAllStringSubmatch(m[2], -1) {
			ok = ok && s.pairs[[3]string{name, lm[1], lm[2]}]
		}
		out[name] = out[name] || ok
	}
	return out
}

// keepLabelValues keeps double-quoted strings (label values) and blanks
// the others, so a metric name inside a description is not read.
func keepLabelValues(q string) string {
	if strings.HasPrefix(q, `"`) {
		return q
	}
	return `""`
}
