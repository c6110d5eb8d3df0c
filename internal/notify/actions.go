// SPDX-License-Identifier: Apache-2.0

package notify

import (
	"context"
	"time"
)

// Action results (jobscope_notify_actions_total{result}).
const (
	actDone    = "done"
	actDryRun  = "dry_run"
	actRefused = "refused"
	actFailed  = "failed"
)

// maybeAct runs the alert's configured action once its owner was warned
// and the grace period has passed while the alert kept firing: it is
// called only when Alertmanager (re)sends the firing alert, and a
// resolved alert forgets the job, so an action never follows an alert that
// stopped.
func (e *engine) maybeAct(ctx context.Context, now time.Time, a Alert, ja *jobAlert) {
	act, ok := e.cfg.Actions[a.Name]
	if !ok || ja.Acted || ja.WarnedAt.IsZero() || now.Sub(ja.WarnedAt) < time.Duration(act.Grace) {
		return
	}
	switch act.Action {
	case ActionNotifyAdmins:
		ja.Acted = true
		o := Owner{JobID: a.JobID, User: ja.User, UID: ja.UID}
		r := renderAction(ActionNotifyAdmins, a, o, ja.WarnedAt)
		e.queue(now, &outgoing{To: e.cfg.Admins, Subject: r.Subject, Text: r.Text, What: "admin notice of job " + a.JobID})
		e.m.actions.WithLabelValues(ActionNotifyAdmins, actDone).Inc()
		e.log.Info("action: admins notified", "job", a.JobID, "user", ja.User, "alert", a.Name, "value", textSafe(a.Value),
			"value_raw", textSafe(a.ValueRaw), "warned_at", ja.WarnedAt)
	case ActionCancel:
		e.cancel(ctx, now, a, ja)
	}
}

// cancel asks Slurm again, right before scancel, whether the job under
// this id is still the one the owner was warned about: same user and uid,
// same start time (the job_key), still running. Only then, and only that
// job id, is cancelled.
func (e *engine) cancel(ctx context.Context, now time.Time, a Alert, ja *jobAlert) {
	o, err := e.lookup(ctx, a.JobID)
	if err == nil {
		err = verify(o, a.JobID, a.JobKey)
	}
	if err == nil && (o.User != ja.User || o.UID != ja.UID || o.Start != ja.Start) {
		err = errJobMismatch
	}
	if err != nil {
		e.m.actions.WithLabelValues(ActionCancel, actRefused).Inc()
		e.log.Warn("action: cancel refused, Slurm's job no longer matches the alert", "job", a.JobID, "alert", a.Name, "err", err)
		ja.Acted = true
		return
	}
	evidence := []any{"job", a.JobID, "user", o.User, "uid", o.UID, "alert", a.Name, "value", textSafe(a.Value),
		"value_raw", textSafe(a.ValueRaw), "job_key", a.JobKey, "warned_at", ja.WarnedAt, "first_seen", ja.FirstSeen}
	if *e.cfg.DryRun {
		ja.Acted = true
		e.m.actions.WithLabelValues(ActionCancel, actDryRun).Inc()
		e.log.Info("dry run: would cancel", evidence...)
		return
	}
	// No shell, and the id was checked as digits when the alert came in.
	if _, err := e.runner.Run(ctx, "scancel", a.JobID); err != nil {
		e.m.actions.WithLabelValues(ActionCancel, actFailed).Inc()
		e.once(causeScancel, "scancel failed; tried again when the alert is next received", append(evidence, "err", err)...)
		return
	}
	ja.Acted = true
	e.m.actions.WithLabelValues(ActionCancel, actDone).Inc()
	e.log.Warn("action: job cancelled", evidence...)
	r := renderAction(ActionCancel, a, o, ja.WarnedAt)
	to := append([]string(nil), e.cfg.Admins...)
	if addr, err := ownerAddress(e.cfg.AddressTemplate, o.User, o.MailUser); err == nil {
		to = append([]string{addr}, to...)
	}
	e.queue(now, &outgoing{To: to, Subject: r.Subject, Text: r.Text, What: "cancel of job " + a.JobID})
}
