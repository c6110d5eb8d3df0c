// SPDX-License-Identifier: Apache-2.0

package notify

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// Bounds on what one webhook call may carry. Alertmanager's own
// max_alerts caps a group; these keep a misconfigured or hostile sender
// from growing memory.
const (
	maxBody       = 1 << 20
	maxAlerts     = 1000
	maxLabels     = 64
	maxLabelValue = 1024
	maxAnnotation = 4096
)

// payload is Alertmanager's webhook body, version 4; fields jobscope does
// not use are left out (and ignored when present).
type payload struct {
	Version string  `json:"version"`
	Status  string  `json:"status"`
	Alerts  []alert `json:"alerts"`
}

type alert struct {
	Status      string            `json:"status"`
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
}

// Alert is one alert about one job, its identifying labels checked. The
// labels are Prometheus's and Alertmanager's, not Slurm's: they say which
// job to ask Slurm about, never who owns it.
type Alert struct {
	Name     string
	Firing   bool
	JobID    string
	JobKey   string
	Cluster  string
	Severity string
	// Annotations, bounded; their text reaches mails escaped.
	Summary, Description, Value, ValueRaw string
}

// errBadPayload is a body that is not a version-4 webhook payload.
var errBadPayload = errors.New("not an Alertmanager webhook payload (version 4)")

// decodePayload reads one webhook body (already bounded by the caller) and
// returns its alerts; alerts that lack what jobscope needs come back as
// errors, one per alert, so the rest still count.
func decodePayload(r io.Reader) ([]Alert, []error, error) {
	var p payload
	dec := json.NewDecoder(r)
	if err := dec.Decode(&p); err != nil {
		return nil, nil, fmt.Errorf("%w: %w", errBadPayload, err)
	}
	if dec.More() {
		return nil, nil, fmt.Errorf("%w: data after the JSON object", errBadPayload)
	}
	if p.Version != "4" {
		return nil, nil, fmt.Errorf("%w: version %q", errBadPayload, clip(p.Version, 16))
	}
	if len(p.Alerts) > maxAlerts {
		return nil, nil, fmt.Errorf("%w: %d alerts, at most %d", errBadPayload, len(p.Alerts), maxAlerts)
	}
	var out []Alert
	var bad []error
	for _, a := range p.Alerts {
		x, err := checkAlert(a)
		if err != nil {
			bad = append(bad, err)
			continue
		}
		out = append(out, x)
	}
	return out, bad, nil
}

func checkAlert(a alert) (Alert, error) {
	if len(a.Labels) > maxLabels || len(a.Annotations) > maxLabels {
		return Alert{}, fmt.Errorf("alert with %d labels, %d annotations", len(a.Labels), len(a.Annotations))
	}
	for _, v := range a.Labels {
		if len(v) > maxLabelValue {
			return Alert{}, fmt.Errorf("label value of %d bytes", len(v))
		}
	}
	x := Alert{Name: a.Labels["alertname"], JobID: a.Labels["jobid"], JobKey: a.Labels["job_key"],
		Cluster: a.Labels["cluster"], Severity: a.Labels["severity"]}
	switch a.Status {
	case "firing":
		x.Firing = true
	case "resolved":
	default:
		return Alert{}, fmt.Errorf("alert status %q", clip(a.Status, 16))
	}
	if !validAlertName(x.Name) {
		return Alert{}, fmt.Errorf("alertname %q", textSafe(clip(x.Name, 64)))
	}
	if !validJobID(x.JobID) {
		return Alert{}, fmt.Errorf("%s: jobid %q", x.Name, textSafe(clip(x.JobID, 32)))
	}
	if x.JobKey == "" || len(x.JobKey) > 256 || textSafe(x.JobKey) != x.JobKey {
		return Alert{}, fmt.Errorf("%s job %s: job_key %q", x.Name, x.JobID, textSafe(clip(x.JobKey, 64)))
	}
	if x.Severity != "critical" {
		x.Severity = "warning"
	}
	ann := func(k string) string { return clip(a.Annotations[k], maxAnnotation) }
	x.Summary, x.Description, x.Value, x.ValueRaw = ann("summary"), ann("description"), ann("value"), ann("value_raw")
	x.Cluster = clip(x.Cluster, 64)
	return x, nil
}

// validJobID accepts the raw numeric job ids jobscope's series carry (an
// array task's own id): the only form passed to squeue and scancel.
func validJobID(s string) bool {
	if s == "" || len(s) > 12 || s[0] == '0' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
