// SPDX-License-Identifier: Apache-2.0

package contrib

import (
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/jobscope/jobscope/cmd/jobscope-report/report"
)

// commentedSetting is a line of a packaged example that holds a setting:
// "#key" at the top level, "#  key" nested; prose comments are "# text".
var commentedSetting = regexp.MustCompile(`(?m)^#([^ #]|  )`)

// uncomment turns a packaged example's commented settings into settings.
func uncomment(b []byte) []byte { return commentedSetting.ReplaceAll(b, []byte("$1")) }

// yamlKeys lists the yaml keys of a settings type, nested ones as a.b;
// Prometheus's own HTTP client block is not this project's to list.
func yamlKeys(t reflect.Type, prefix string) []string {
	var keys []string
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "" || name == "-" {
			continue
		}
		keys = append(keys, prefix+name)
		if f.Type.Kind() == reflect.Struct && name != "http_config" {
			keys = append(keys, yamlKeys(f.Type, prefix+name+".")...)
		}
	}
	return keys
}

// TestPackagedReportConfig: /etc/jobscope/report.yml as packaged loads to
// the defaults; with every setting uncommented it still loads (strictly:
// an unknown key fails), to the same defaults, and it shows every key.
func TestPackagedReportConfig(t *testing.T) {
	src := "packaging/etc/report.yml"
	asIs, err := report.LoadConfig(src, true)
	if err != nil {
		t.Fatalf("%s as packaged: %v", src, err)
	}
	open := filepath.Join(t.TempDir(), "report.yml")
	text := uncomment(mustRead(t, src))
	if err := os.WriteFile(open, text, 0o644); err != nil {
		t.Fatal(err)
	}
	all, err := report.LoadConfig(open, true)
	if err != nil {
		t.Fatalf("%s with its settings uncommented: %v\n%s", src, err, text)
	}
	for name, c := range map[string]report.Config{"as packaged": asIs, "uncommented": all} {
		def := report.DefaultConfig()
		def.Prometheus.HTTP.SetDirectory(filepath.Dir(src)) // as LoadConfig does
		if name == "uncommented" {
			def.Prometheus.HTTP.SetDirectory(filepath.Dir(open))
		}
		if !reflect.DeepEqual(c, def) {
			t.Errorf("%s %s: %+v\nwant the defaults %+v", src, name, c, def)
		}
	}
	// Every key, at its depth: "key:" top level, "  key:" one level down.
	for _, k := range yamlKeys(reflect.TypeFor[report.Config](), "") {
		indent := strings.Repeat("  ", strings.Count(k, "."))
		leaf := k[strings.LastIndex(k, ".")+1:]
		if !regexp.MustCompile(`(?m)^` + indent + regexp.QuoteMeta(leaf) + `:`).Match(text) {
			t.Errorf("%s does not show the key %s", src, k)
		}
	}
}

// TestPackagedReportEpilogConf: /etc/jobscope/report-epilog.conf as
// packaged keeps the report off and shows every key the epilog reads.
func TestPackagedReportEpilogConf(t *testing.T) {
	src := string(mustRead(t, "packaging/etc/report-epilog.conf"))
	script := string(mustRead(t, "slurm/epilog.d/jobscope-report.sh"))
	var read, shown []string
	for _, m := range regexp.MustCompile(`\$\(get ([A-Z]+) `).FindAllStringSubmatch(script, -1) {
		read = append(read, m[1])
	}
	for _, m := range regexp.MustCompile(`(?m)^#([A-Z]+)=`).FindAllStringSubmatch(src, -1) {
		shown = append(shown, m[1])
	}
	slices.Sort(read)
	slices.Sort(shown)
	if read = slices.Compact(read); len(read) < 5 || !slices.Equal(read, shown) {
		t.Errorf("the epilog reads %v; the packaged conf shows %v", read, shown)
	}
	if regexp.MustCompile(`(?m)^[A-Z]+=`).MatchString(src) {
		t.Error("the packaged conf sets a value: it must only show them, commented (the report stays off)")
	}
}
