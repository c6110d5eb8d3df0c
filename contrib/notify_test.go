// SPDX-License-Identifier: Apache-2.0

package contrib

import (
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The running-job alerts `jobscope notify` receives (docs/notify.md): the
// names are an interface between the rules, the receiver's actions config
// and Alertmanager's route.
const jobAlertRules = "prometheus/jobscope-job-alert-rules.yml"

var (
	jobAlertsRequired = []string{"JobscopeJobGPUIdle", "JobscopeJobCPUEfficiencyLow",
		"JobscopeJobMemoryOverRequested", "JobscopeJobMemoryNearLimit", "JobscopeJobOOMKills"}
	jobAlertsOptional = []string{"JobscopeJobTimeLimitShort"}
	// The minimum runtime, in the one form test/e2e/notify.sh shortens by
	// substitution.
	minRuntime = regexp.MustCompile(`and on \(jobid, job_key\) \(time\(\) - job:slurm_job_first_seen:timestamp\) > ([0-9]+)\s*$`)
)

// alertBlocks returns each alert's YAML lines (from its `- alert:` line to
// the next rule) by name.
func alertBlocks(t *testing.T, path string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	blocks := map[string]string{}
	name := ""
	for _, l := range strings.Split(string(b), "\n") {
		trim := strings.TrimSpace(l)
		switch {
		case strings.HasPrefix(trim, "- alert:"):
			name = strings.TrimSpace(strings.TrimPrefix(trim, "- alert:"))
		case strings.HasPrefix(trim, "- record:"):
			name = ""
		}
		if name != "" {
			blocks[name] += l + "\n"
		}
	}
	return blocks
}

// TestJobAlertRulesInterface: the job alerts have the fixed names, each
// ends in the substitutable minimum-runtime clause, and carries a severity
// the receiver knows and the four annotations it reads.
func TestJobAlertRulesInterface(t *testing.T) {
	var names []string
	for _, r := range readRules(t, jobAlertRules) {
		if r.alert == "" {
			continue
		}
		names = append(names, r.alert)
		if !slices.Contains(jobAlertsRequired, r.alert) && !slices.Contains(jobAlertsOptional, r.alert) {
			t.Errorf("alert %s is not one of the job alerts the receiver knows", r.alert)
		}
		if n := len(regexp.MustCompile(`job:slurm_job_first_seen:timestamp\)`).FindAllString(r.expr, -1)); n != 1 || !minRuntime.MatchString(r.expr) {
			t.Errorf("alert %s: expr must end in exactly one %q clause, has:\n%s", r.alert, minRuntime, r.expr)
		}
	}
	for _, want := range jobAlertsRequired {
		if !slices.Contains(names, want) {
			t.Errorf("alert %s missing (have %v)", want, names)
		}
	}
	for name, block := range alertBlocks(t, jobAlertRules) {
		if !regexp.MustCompile(`(?m)^\s+severity: (warning|critical)$`).MatchString(block) {
			t.Errorf("alert %s: no severity warning or critical", name)
		}
		for _, a := range []string{"summary", "description", "value", "value_raw"} {
			if !regexp.MustCompile(`(?m)^\s+` + a + `: \S`).MatchString(block) {
				t.Errorf("alert %s: no %s annotation", name, a)
			}
		}
	}
}

// TestJobAlertRuleTestsCoverEachAlert: tests/job-alerts.yml has, for each
// job alert, a case where it fires and one where it stays quiet.
func TestJobAlertRuleTestsCoverEachAlert(t *testing.T) {
	b, err := os.ReadFile("prometheus/tests/job-alerts.yml")
	if err != nil {
		t.Fatal(err)
	}
	fires, quiet := map[string]bool{}, map[string]bool{}
	lines := strings.Split(string(b), "\n")
	for i, l := range lines {
		name, ok := strings.CutPrefix(strings.TrimSpace(l), "alertname: ")
		if !ok || i+1 >= len(lines) {
			continue
		}
		switch strings.TrimSpace(lines[i+1]) {
		case "exp_alerts: []":
			quiet[name] = true
		case "exp_alerts:":
			fires[name] = true
		}
	}
	for _, r := range readRules(t, jobAlertRules) {
		if r.alert != "" && (!fires[r.alert] || !quiet[r.alert]) {
			t.Errorf("alert %s: tests/job-alerts.yml has fires=%v quiet=%v, want both", r.alert, fires[r.alert], quiet[r.alert])
		}
	}
}

// TestAlertmanagerRoutesJobAlerts: the example's route to the receiver
// matches every job alert and no other alert of the shipped rules (those
// are for admins).
func TestAlertmanagerRoutesJobAlerts(t *testing.T) {
	b, err := os.ReadFile("alertmanager/alertmanager.yml")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`alertname=~"([^"]+)"`).FindSubmatch(b)
	if m == nil {
		t.Fatal("alertmanager.yml: no alertname=~ matcher for the job alerts")
	}
	route := regexp.MustCompile("^(?:" + string(m[1]) + ")$")
	jobs := map[string]bool{}
	for _, r := range readRules(t, jobAlertRules) {
		if r.alert != "" {
			jobs[r.alert] = true
		}
	}
	for _, f := range ruleFiles(t) {
		for _, r := range readRules(t, f) {
			if r.alert != "" && route.MatchString(r.alert) != jobs[r.alert] {
				t.Errorf("%s: alert %s: routed to the receiver = %v, is a job alert = %v", f, r.alert, route.MatchString(r.alert), jobs[r.alert])
			}
		}
	}
	for _, want := range []string{"group_by: [cluster, jobid]", "credentials_file:", "send_resolved: true"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("alertmanager.yml: no %q", want)
		}
	}
}

func TestAmtoolCheckConfig(t *testing.T) {
	p, err := exec.LookPath("amtool")
	if err != nil {
		if os.Getenv("JOBSCOPE_REQUIRE_PROMTOOL") != "" {
			t.Fatal("amtool not found and JOBSCOPE_REQUIRE_PROMTOOL is set (apt-get install prometheus-alertmanager)")
		}
		t.Skip("amtool not installed (Debian: apt-get install prometheus-alertmanager); skipping its check")
	}
	if out, err := exec.Command(p, "check-config", "alertmanager/alertmanager.yml").CombinedOutput(); err != nil {
		t.Fatalf("amtool check-config: %v\n%s", err, out)
	}
}
