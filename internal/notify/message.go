// SPDX-License-Identifier: Apache-2.0

package notify

import (
	"bytes"
	"fmt"
	"html/template"
	"slices"
	"sort"
	"strings"
	"time"
)

// advice is what the owner can do about each alert, in the spirit of the
// warnings `jobscope report` gives at the end of a job (report's texts are
// not exported, and these speak of a job still running).
var advice = map[string]string{
	"JobscopeJobGPUIdle": "The job holds a GPU it does not use. If the code cannot use it, cancel the job " +
		"and resubmit without --gres=gpu (or with fewer GPUs); check that the program was built with GPU support " +
		"and sees CUDA_VISIBLE_DEVICES.",
	"JobscopeJobCPUEfficiencyLow": "Most of the allocated cores are idle. Request only the cores the program " +
		"uses (--ntasks, --cpus-per-task), or make it use them (threads: OMP_NUM_THREADS; MPI: srun).",
	"JobscopeJobMemoryOverRequested": "The job uses far less memory than it requested; the rest is held back " +
		"from other jobs. Next time request about the peak plus a margin (--mem / --mem-per-cpu).",
	"JobscopeJobMemoryNearLimit": "The job is close to its memory limit and may be killed (OOM). If it is, " +
		"resubmit with a larger --mem.",
	"JobscopeJobOOMKills": "Processes of the job are being killed for exceeding its memory limit. Its results " +
		"may be incomplete: check its output, and resubmit with a larger --mem.",
	"JobscopeJobTimeLimitShort": "The job will likely reach its time limit before it finishes. Ask for more " +
		"time (scontrol update may be allowed at your site), or make it checkpoint.",
}

const defaultAdvice = "See the job's report for details."

// renderedMessage is a mail ready for the outbox.
type renderedMessage struct {
	Subject, Text, HTML string
}

type jobView struct {
	ID, Name, Cluster, Report string
	Alerts                    []alertView
}

type alertView struct {
	Name, Severity, Summary, Value, Description, Advice string
}

type digestView struct {
	User, Cluster, Period string
	Jobs                  []jobView
	More                  int
}

// renderDigest writes one digest: text through textSafe, HTML through
// html/template (every string a job's user could have written is escaped
// there). Items come in arrival order; jobs are sorted by id.
func renderDigest(user string, items []item, more int, reportCmd string, period time.Duration) renderedMessage {
	byJob := map[string]*jobView{}
	var clusters []string
	for _, it := range items {
		a := it.Alert
		j := byJob[a.JobID]
		if j == nil {
			j = &jobView{ID: a.JobID, Name: clip(it.JobName, 200), Cluster: a.Cluster,
				Report: strings.ReplaceAll(reportCmd, "{jobid}", a.JobID)}
			byJob[a.JobID] = j
			if a.Cluster != "" && !slices.Contains(clusters, a.Cluster) {
				clusters = append(clusters, a.Cluster)
			}
		}
		adv := advice[a.Name]
		if adv == "" {
			adv = defaultAdvice
		}
		j.Alerts = append(j.Alerts, alertView{Name: a.Name, Severity: a.Severity, Summary: a.Summary,
			Value: a.Value, Description: a.Description, Advice: adv})
	}
	v := digestView{User: user, Cluster: strings.Join(clusters, ", "), Period: period.String(), More: more}
	ids := make([]string, 0, len(byJob))
	for id := range byJob {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, k int) bool { return len(ids[i]) < len(ids[k]) || len(ids[i]) == len(ids[k]) && ids[i] < ids[k] })
	for _, id := range ids {
		v.Jobs = append(v.Jobs, *byJob[id])
	}
	return renderedMessage{Subject: digestSubject(v.Cluster, ids), Text: digestText(v), HTML: digestHTML(v)}
}

// digestSubject names the cluster and the job ids; it is a header, so
// everything in it passes textSafe (no line break can start a header).
func digestSubject(cluster string, ids []string) string {
	s := "[jobscope] "
	if cluster != "" {
		s += cluster + ": "
	}
	jobs := ids
	if len(jobs) > 10 {
		jobs = jobs[:10]
	}
	word, verb := "job ", " needs attention"
	if len(ids) > 1 {
		word, verb = "jobs ", " need attention"
	}
	s += word + strings.Join(jobs, ", ")
	if len(ids) > len(jobs) {
		s += fmt.Sprintf(" and %d more", len(ids)-len(jobs))
	}
	return textSafe(clip(s+verb, 200))
}

func digestText(v digestView) string {
	var b strings.Builder
	w := func(format string, a ...any) { b.WriteString(textSafe(fmt.Sprintf(format, a...)) + "\n") }
	w("Hello %s,", v.User)
	b.WriteString("\n")
	w("jobscope noticed the following about your running jobs. Nothing has been done to them.")
	for _, j := range v.Jobs {
		b.WriteString("\n")
		if j.Name != "" {
			w("Job %s (%q) on cluster %s", j.ID, j.Name, orDash(j.Cluster))
		} else {
			w("Job %s on cluster %s", j.ID, orDash(j.Cluster))
		}
		for _, a := range j.Alerts {
			w("  * %s [%s]", orDash(a.Summary), a.Severity)
			if a.Value != "" {
				w("    Measured: %s", a.Value)
			}
			if a.Description != "" {
				w("    %s", a.Description)
			}
			w("    What to do: %s", a.Advice)
		}
		w("  Details: %s", j.Report)
	}
	if v.More > 0 {
		b.WriteString("\n")
		w("... and %d more alerts not listed here.", v.More)
	}
	b.WriteString("\n")
	w("You get at most one message per kind of alert every %s. Your site's admins can take you off this list.", v.Period)
	return b.String()
}

var digestTmpl = template.Must(template.New("digest").Parse(`<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>jobscope</title></head><body>
<p>Hello {{.User}},</p>
<p>jobscope noticed the following about your running jobs. Nothing has been done to them.</p>
{{range .Jobs}}<h3>Job {{.ID}}{{if .Name}} ({{.Name}}){{end}} on cluster {{or .Cluster "-"}}</h3>
<ul>{{range .Alerts}}
<li><b>{{or .Summary .Name}}</b> [{{.Severity}}]{{if .Value}}<br>Measured: {{.Value}}{{end}}{{if .Description}}<br>{{.Description}}{{end}}<br>What to do: {{.Advice}}</li>{{end}}
</ul>
<p>Details: <code>{{.Report}}</code></p>
{{end}}{{if .More}}<p>... and {{.More}} more alerts not listed here.</p>{{end}}
<p>You get at most one message per kind of alert every {{.Period}}. Your site's admins can take you off this list.</p>
</body></html>
`))

func digestHTML(v digestView) string {
	var b bytes.Buffer
	if err := digestTmpl.Execute(&b, v); err != nil {
		return "" // the text part still goes out
	}
	return b.String()
}

// renderAction writes the mail about an action taken on a job, to the
// owner and the admins: what was done, why (the alert's figures) and when
// the owner had been warned.
func renderAction(action string, a Alert, o Owner, warned time.Time) renderedMessage {
	verb := map[string]string{ActionCancel: "was cancelled", ActionNotifyAdmins: "is reported to the admins"}[action]
	var b strings.Builder
	w := func(format string, args ...any) { b.WriteString(textSafe(fmt.Sprintf(format, args...)) + "\n") }
	w("Job %s of user %s (uid %d) on cluster %s %s by jobscope notify.", a.JobID, o.User, o.UID, orDash(a.Cluster), verb)
	w("Alert: %s [%s]: %s", a.Name, a.Severity, orDash(a.Summary))
	w("Measured: %s (raw value %s)", orDash(a.Value), orDash(a.ValueRaw))
	if !warned.IsZero() {
		w("The owner was first warned at %s.", warned.UTC().Format(time.RFC3339))
	}
	w("Job key: %s", a.JobKey)
	subj := textSafe(clip(fmt.Sprintf("[jobscope] %s: job %s %s (%s)", orDash(a.Cluster), a.JobID, verb, a.Name), 200))
	return renderedMessage{Subject: subj, Text: b.String()}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
