// SPDX-License-Identifier: Apache-2.0

package contrib

import (
	"os"
	"path"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v2"
)

// nfpmEntry is what these tests read of one nfpm contents entry.
type nfpmEntry struct {
	Src      string `yaml:"src"`
	Dst      string `yaml:"dst"`
	Type     string `yaml:"type"`
	Packager string `yaml:"packager"`
}

func nfpmContents(t *testing.T) []nfpmEntry {
	t.Helper()
	var cfg struct {
		Contents []nfpmEntry       `yaml:"contents"`
		Scripts  map[string]string `yaml:"scripts"`
	}
	if err := yaml.Unmarshal(mustRead(t, "packaging/nfpm.yaml"), &cfg); err != nil {
		t.Fatal(err)
	}
	if len(cfg.Contents) < 10 || len(cfg.Scripts) == 0 {
		t.Fatalf("nfpm.yaml not understood: %d entries, scripts %v", len(cfg.Contents), cfg.Scripts)
	}
	// Maintainer scripts name paths too (postremove: /usr/bin/jobscope).
	for _, s := range cfg.Scripts {
		cfg.Contents = append(cfg.Contents, nfpmEntry{Src: s})
	}
	return cfg.Contents
}

// sitePaths are jobscope paths packaged files name that a site provides,
// never the packages.
var sitePaths = map[string]string{
	"/etc/prometheus/jobscope-nodes.yml": "the site's list of nodes to scrape (prometheus.yml's file_sd)",
	"/usr/local/bin/jobscope":            "a site's own build, the report epilog's fallback",
	"/etc/jobscope/notify-token":         "the notify receiver's webhook secret, made by the site (docs/notify.md)",
	"/etc/jobscope/notify-optout":        "the site's list of users who opted out of notify mails",
}

// jobscopePath matches an absolute path under /etc, /usr or /opt; only
// those naming jobscope are this project's to install.
var jobscopePath = regexp.MustCompile(`/(?:etc|usr|opt)/[A-Za-z0-9._%/-]*`)

// namedPaths returns the installed paths a packaged file names: absolute
// jobscope paths anywhere in it (comments included: a comment that points
// to a missing file misleads as much), and a Prometheus config's rule
// files, relative to where the config is installed.
func namedPaths(t *testing.T, e nfpmEntry) []string {
	b := mustRead(t, e.Src)
	var paths []string
	for _, p := range jobscopePath.FindAllString(string(b), -1) {
		p = strings.TrimRight(p, "./-")
		if strings.Contains(p, "jobscope") {
			paths = append(paths, p)
		}
	}
	if strings.HasSuffix(e.Src, "prometheus.yml") {
		var prom struct {
			RuleFiles []string `yaml:"rule_files"`
		}
		if err := yaml.Unmarshal(b, &prom); err != nil || len(prom.RuleFiles) == 0 {
			t.Fatalf("%s: no rule_files read (%v)", e.Src, err)
		}
		for _, f := range prom.RuleFiles {
			if !path.IsAbs(f) {
				f = path.Join(path.Dir(e.Dst), f)
			}
			paths = append(paths, f)
		}
	}
	slices.Sort(paths)
	return slices.Compact(paths)
}

// missingPaths lists "file names path" for every path a packaged config,
// unit or script names that entries do not install (and a site does not
// provide), and how many named paths it checked.
func missingPaths(t *testing.T, entries []nfpmEntry) (missing []string, checked int) {
	installed := map[string]bool{}
	for _, e := range entries {
		for d := e.Dst; d != "/" && d != "." && d != ""; d = path.Dir(d) {
			installed[d] = true
		}
	}
	for _, e := range entries {
		if !strings.HasPrefix(e.Src, "contrib/") || e.Type == "tree" {
			continue // the binary, man page and licence texts are built
		}
		e.Src = strings.TrimPrefix(e.Src, "contrib/") // tests run in contrib/
		for _, p := range namedPaths(t, e) {
			checked++
			if !installed[p] && sitePaths[p] == "" {
				missing = append(missing, e.Src+" names "+p)
			}
		}
	}
	return missing, checked
}

// TestPackagedPathsInstalled: every file a packaged config, unit or script
// names is installed by the packages (or is one a site provides): the
// Prometheus config once named a rules file the packages left out, and the
// report epilog a configuration directory they did not create.
func TestPackagedPathsInstalled(t *testing.T) {
	entries := nfpmContents(t)
	missing, checked := missingPaths(t, entries)
	if checked < 10 {
		t.Fatalf("only %d paths found in the packaged files: the scan is broken", checked)
	}
	for _, m := range missing {
		t.Errorf("%s, which the packages do not install (contrib/packaging/nfpm.yaml)", m)
	}
	// The check sees an omission: the same contents without the summary rules.
	var short []nfpmEntry
	for _, e := range entries {
		if path.Base(e.Dst) != "jobscope-summary-rules.yml" {
			short = append(short, e)
		}
	}
	want := "prometheus/prometheus.yml names /usr/share/jobscope/prometheus/jobscope-summary-rules.yml"
	if got, _ := missingPaths(t, short); !slices.Equal(got, []string{want}) {
		t.Errorf("without the summary rules' entry: %q, want [%q]", got, want)
	}
}

// TestPackagedRulesComplete: every rules file of contrib/prometheus is
// packaged and loaded by the packaged prometheus.yml.
func TestPackagedRulesComplete(t *testing.T) {
	var dsts []string
	for _, e := range nfpmContents(t) {
		dsts = append(dsts, e.Dst)
	}
	for _, f := range ruleFiles(t) {
		dst := "/usr/share/jobscope/prometheus/" + path.Base(f)
		if !slices.Contains(dsts, dst) {
			t.Errorf("%s is not packaged as %s", f, dst)
		}
		if !strings.Contains(string(mustRead(t, "prometheus/prometheus.yml")), "- "+path.Base(f)) {
			t.Errorf("prometheus/prometheus.yml does not load %s", path.Base(f))
		}
	}
}

// TestPackagedConfigFiles: what the packages put in /etc is a config file
// an upgrade keeps (config|noreplace: a dpkg conffile, rpm
// %config(noreplace)), and /etc/jobscope holds the two examples.
func TestPackagedConfigFiles(t *testing.T) {
	var inEtc []string
	for _, e := range nfpmContents(t) {
		if !strings.HasPrefix(e.Dst, "/etc/") || e.Type == "dir" {
			continue
		}
		inEtc = append(inEtc, e.Dst)
		if e.Type != "config|noreplace" {
			t.Errorf("%s has type %q: an upgrade would overwrite a site's edits (want config|noreplace)", e.Dst, e.Type)
		}
		if fi, err := os.Stat(strings.TrimPrefix(e.Src, "contrib/")); err != nil || fi.Mode()&0o004 == 0 {
			t.Errorf("%s: its source %s must exist and be world-readable (users read report.yml): %v", e.Dst, e.Src, err)
		}
	}
	for _, want := range []string{"/etc/jobscope/report.yml", "/etc/jobscope/report-epilog.conf"} {
		if !slices.Contains(inEtc, want) {
			t.Errorf("%s is not packaged", want)
		}
	}
}
