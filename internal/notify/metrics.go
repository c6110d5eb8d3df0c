// SPDX-License-Identifier: Apache-2.0

package notify

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Message results.
const (
	resSent      = "sent"
	resDryRun    = "dry_run"
	resFailed    = "failed"
	resSupressed = "suppressed"
	resOptedOut  = "opted_out"
)

// Error causes (jobscope_notify_errors_total{cause}).
const (
	causeUnauthorized = "unauthorized"
	causeBadRequest   = "bad_request"
	causeBadAlert     = "bad_alert"
	causeSlurm        = "slurm"
	causeNotFound     = "job_not_found"
	causeNotRunning   = "job_not_running"
	causeMismatch     = "job_key_mismatch"
	causeNoKey        = "job_key_unverifiable"
	causeBadOwner     = "bad_owner"
	causeSMTP         = "smtp"
	causeScancel      = "scancel"
	causeState        = "state"
	causeQueueFull    = "queue_full"
	causeOptOutFile   = "opt_out_file"
)

type metrics struct {
	reg      *prometheus.Registry
	received *prometheus.CounterVec
	messages *prometheus.CounterVec
	actions  *prometheus.CounterVec
	errors   *prometheus.CounterVec
	queue    prometheus.Gauge
}

// newMetrics builds the receiver's own metrics on a registry of its own:
// the receiver is an application, not an exporter of jobs, so plain
// counters fit; every label value it knows is created at zero so that
// rate() and absent() work from the first scrape.
func newMetrics() *metrics {
	m := &metrics{
		reg: prometheus.NewPedanticRegistry(),
		received: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "jobscope_notify_alerts_received_total",
			Help: "Alerts received on the Alertmanager webhook (firing and resolved), by alert name."}, []string{"alertname"}),
		messages: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "jobscope_notify_messages_total",
			Help: "Messages by result: sent, dry_run (logged, not sent), failed (given up after the last retry), suppressed (alerts held back by the once-per-period limit), opted_out (alerts for users on the opt-out list)."}, []string{"result"}),
		actions: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "jobscope_notify_actions_total",
			Help: "Actions on jobs (cancel, notify-admins) by result: done, dry_run, refused (Slurm's job no longer matches), failed."}, []string{"action", "result"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "jobscope_notify_errors_total",
			Help: "Errors by cause: unauthorized or bad_request webhook calls, bad_alert, slurm (command failed, retried), job_not_found, job_not_running, job_key_mismatch (job id reused), job_key_unverifiable, bad_owner, smtp (retried), scancel, state, queue_full, opt_out_file."}, []string{"cause"}),
		queue: prometheus.NewGauge(prometheus.GaugeOpts{Name: "jobscope_notify_queue_length",
			Help: "Messages waiting to be sent or retried, plus alerts waiting for a Slurm lookup retry, plus alerts in open digests."}),
	}
	m.reg.MustRegister(m.received, m.messages, m.actions, m.errors, m.queue)
	for _, r := range []string{resSent, resDryRun, resFailed, resSupressed, resOptedOut} {
		m.messages.WithLabelValues(r)
	}
	for _, c := range []string{causeUnauthorized, causeBadRequest, causeSlurm, causeSMTP, causeMismatch} {
		m.errors.WithLabelValues(c)
	}
	return m
}
