// SPDX-License-Identifier: Apache-2.0

package notify

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/jobscope/jobscope/slurmcli"
)

// maxAlertNames bounds the alertname label of the received counter.
const maxAlertNames = 64

// engine decides what to do with alerts. One goroutine owns it (the run
// loop; tests call process and tick directly), so it needs no lock; the
// metrics are safe for the /metrics handler.
type engine struct {
	cfg    *Config
	log    *slog.Logger
	m      *metrics
	runner *slurmcli.Runner
	send   sender
	lookup func(ctx context.Context, jobID string) (Owner, error)
	st     *state

	optOut      map[string]bool
	optOutStamp time.Time
	errs        *onceLog
	names       map[string]bool // alert names in the received counter
}

func newEngine(cfg *Config, log *slog.Logger, m *metrics, r *slurmcli.Runner, s sender) *engine {
	e := &engine{cfg: cfg, log: log, m: m, runner: r, send: s, st: newState(),
		errs: newOnceLog(log, m), names: map[string]bool{}}
	e.lookup = func(ctx context.Context, id string) (Owner, error) { return slurmLookup(ctx, r, id) }
	return e
}

func (e *engine) once(cause, msg string, args ...any) { e.errs.report(cause, msg, args...) }

func (e *engine) countReceived(name string) {
	if !e.names[name] && len(e.names) >= maxAlertNames {
		name = "other"
	}
	e.names[name] = true
	e.m.received.WithLabelValues(name).Inc()
}

// process handles the alerts of one webhook call.
func (e *engine) process(ctx context.Context, now time.Time, alerts []Alert) {
	e.reloadOptOut()
	for _, a := range alerts {
		e.countReceived(a.Name)
		if !a.Firing {
			// Resolved: the next firing starts a new grace period.
			delete(e.st.Jobs, jobAlertKey(a.JobKey, a.Name))
			continue
		}
		e.resolve(ctx, now, &pendingAlert{Alert: a})
	}
	e.finish(now)
}

// resolve asks Slurm about the alert's job and goes on with it, or queues
// the alert for a retry when Slurm did not answer.
func (e *engine) resolve(ctx context.Context, now time.Time, p *pendingAlert) {
	a := p.Alert
	o, err := e.lookup(ctx, a.JobID)
	if err == nil {
		err = verify(o, a.JobID, a.JobKey)
	}
	switch {
	case err == nil:
	case errors.Is(err, errJobNotFound):
		e.once(causeNotFound, "job of an alert not found in Slurm; nothing sent", "job", a.JobID, "alert", a.Name)
		return
	case errors.Is(err, errJobNotRunning):
		e.once(causeNotRunning, "job of an alert no longer running; nothing sent", "job", a.JobID, "alert", a.Name, "err", err)
		return
	case errors.Is(err, errJobMismatch):
		e.once(causeMismatch, "alert's job_key does not match Slurm's job (id reused); nothing sent", "job", a.JobID,
			"alert", a.Name, "job_key", a.JobKey, "err", err)
		return
	case errors.Is(err, errNoKey):
		e.once(causeNoKey, "alert's job_key carries no start time to check against Slurm; nothing sent", "job", a.JobID,
			"alert", a.Name, "job_key", a.JobKey)
		return
	default:
		e.once(causeSlurm, "Slurm lookup failed; will retry", "job", a.JobID, "alert", a.Name, "err", err)
		p.Attempts++
		if p.Attempts >= e.cfg.Retry.Attempts {
			e.log.Error("gave up on an alert: Slurm never answered", "job", a.JobID, "alert", a.Name, "attempts", p.Attempts)
			e.m.messages.WithLabelValues(resFailed).Inc()
			return
		}
		if p.Attempts == 1 {
			if len(e.st.Pending) >= maxPending {
				e.once(causeQueueFull, "lookup retry queue full; alert dropped", "job", a.JobID, "alert", a.Name)
				e.m.messages.WithLabelValues(resFailed).Inc()
				return
			}
			e.st.Pending = append(e.st.Pending, p)
		}
		p.Next = now.Add(backoff(p.Attempts, time.Duration(e.cfg.Retry.Initial), time.Duration(e.cfg.Retry.Max)))
		return
	}
	e.accept(ctx, now, a, o)
}

// accept files a verified alert: into the owner's digest, or counted as
// held back by the opt-out list or the once-per-period limit; then checks
// the alert's action.
func (e *engine) accept(ctx context.Context, now time.Time, a Alert, o Owner) {
	ja := e.jobAlert(now, a, o)
	switch {
	case e.optOut[o.User]:
		e.m.messages.WithLabelValues(resOptedOut).Inc()
		e.warned(ja, now)
	case e.inDigest(o.User, a):
		// Alertmanager resent it before the digest went out.
	case now.Sub(e.st.Ledger[ledgerKey(o.User, a.Name)]) < time.Duration(e.cfg.Period):
		e.m.messages.WithLabelValues(resSupressed).Inc()
		e.warned(ja, now)
	default:
		addr, err := ownerAddress(e.cfg.AddressTemplate, o.User, o.MailUser)
		if err != nil {
			e.once(causeBadOwner, "no valid address for a job's owner; nothing sent", "job", a.JobID, "err", err)
			return
		}
		d := e.st.Digests[o.User]
		if d == nil {
			d = &digest{User: o.User, Due: now.Add(time.Duration(e.cfg.DigestWait))}
			e.st.Digests[o.User] = d
		}
		if len(d.Items) >= maxDigestItems {
			d.More++
		} else {
			d.Items = append(d.Items, item{Alert: a, JobName: clip(o.Name, 256), Address: addr})
		}
	}
	e.maybeAct(ctx, now, a, ja)
}

func (e *engine) jobAlert(now time.Time, a Alert, o Owner) *jobAlert {
	k := jobAlertKey(a.JobKey, a.Name)
	ja := e.st.Jobs[k]
	if ja == nil {
		if len(e.st.Jobs) >= maxJobs {
			e.once(causeQueueFull, "too many tracked job alerts; this one is not tracked for actions", "job", a.JobID)
			return &jobAlert{FirstSeen: now}
		}
		ja = &jobAlert{FirstSeen: now, User: o.User, UID: o.UID, Start: o.Start}
		e.st.Jobs[k] = ja
	}
	ja.LastSeen = now
	return ja
}

func (e *engine) warned(ja *jobAlert, now time.Time) {
	if ja.WarnedAt.IsZero() {
		ja.WarnedAt = now
	}
}

func (e *engine) inDigest(user string, a Alert) bool {
	d := e.st.Digests[user]
	if d == nil {
		return false
	}
	for _, it := range d.Items {
		if it.Alert.JobKey == a.JobKey && it.Alert.Name == a.Name {
			return true
		}
	}
	return false
}

// tick does what is due at now: lookups to retry, digests to close,
// messages to send or resend.
func (e *engine) tick(ctx context.Context, now time.Time) {
	e.reloadOptOut()
	var due []*pendingAlert
	keep := e.st.Pending[:0]
	for _, p := range e.st.Pending {
		if !now.Before(p.Next) {
			due = append(due, p)
		} else {
			keep = append(keep, p)
		}
	}
	e.st.Pending = keep
	for _, p := range due {
		e.resolve(ctx, now, p)
		if p.Next.After(now) && p.Attempts < e.cfg.Retry.Attempts {
			e.st.Pending = append(e.st.Pending, p) // failed again: back in the queue
		}
	}
	users := make([]string, 0, len(e.st.Digests))
	for u, d := range e.st.Digests {
		if !now.Before(d.Due) {
			users = append(users, u)
		}
	}
	sort.Strings(users)
	for _, u := range users {
		e.flush(now, e.st.Digests[u])
		delete(e.st.Digests, u)
	}
	e.sendDue(ctx, now)
	e.st.prune(now, time.Duration(e.cfg.Period))
	e.finish(now)
}

// flush turns a digest into one message per address (jobs whose owner
// chose another --mail-user go there, and only those jobs), records the
// alert names in the ledger and marks the jobs warned.
func (e *engine) flush(now time.Time, d *digest) {
	byAddr := map[string][]item{}
	var addrs []string
	for _, it := range d.Items {
		if byAddr[it.Address] == nil {
			addrs = append(addrs, it.Address)
		}
		byAddr[it.Address] = append(byAddr[it.Address], it)
		e.st.Ledger[ledgerKey(d.User, it.Alert.Name)] = now
		if ja := e.st.Jobs[jobAlertKey(it.Alert.JobKey, it.Alert.Name)]; ja != nil {
			e.warned(ja, now)
		}
	}
	for i, addr := range addrs {
		more := 0
		if i == 0 {
			more = d.More
		}
		r := renderDigest(d.User, byAddr[addr], more, e.cfg.ReportCommand, time.Duration(e.cfg.Period))
		e.queue(now, &outgoing{To: []string{addr}, Subject: r.Subject, Text: r.Text, HTML: r.HTML,
			What: "digest for " + d.User})
	}
}

// queue sends m now or, in dry run, logs what it would have sent.
func (e *engine) queue(now time.Time, m *outgoing) {
	if *e.cfg.DryRun {
		e.log.Info("dry run: would send", "what", m.What, "to", m.To, "subject", m.Subject)
		e.m.messages.WithLabelValues(resDryRun).Inc()
		return
	}
	if len(e.st.Outbox) >= maxOutbox {
		e.log.Error("outbox full; message given up", "what", m.What, "to", m.To)
		e.m.errors.WithLabelValues(causeQueueFull).Inc()
		e.m.messages.WithLabelValues(resFailed).Inc()
		return
	}
	m.Next = now
	e.st.Outbox = append(e.st.Outbox, m)
}

func (e *engine) sendDue(ctx context.Context, now time.Time) {
	keep := e.st.Outbox[:0]
	for _, m := range e.st.Outbox {
		if now.Before(m.Next) {
			keep = append(keep, m)
			continue
		}
		err := e.send.send(ctx, m)
		if err == nil {
			e.m.messages.WithLabelValues(resSent).Inc()
			e.log.Info("sent", "what", m.What, "to", m.To, "attempt", m.Attempts+1)
			continue
		}
		m.Attempts++
		e.once(causeSMTP, "sending mail failed; will retry", "what", m.What, "err", err)
		if m.Attempts >= e.cfg.Retry.Attempts {
			e.log.Error("gave up on a message after its last retry", "what", m.What, "to", m.To,
				"subject", m.Subject, "attempts", m.Attempts, "err", err)
			e.m.messages.WithLabelValues(resFailed).Inc()
			continue
		}
		m.Next = now.Add(backoff(m.Attempts, time.Duration(e.cfg.Retry.Initial), time.Duration(e.cfg.Retry.Max)))
		keep = append(keep, m)
	}
	e.st.Outbox = keep
}

// finish saves the state and updates the queue gauge.
func (e *engine) finish(_ time.Time) {
	n := len(e.st.Outbox) + len(e.st.Pending)
	for _, d := range e.st.Digests {
		n += len(d.Items)
	}
	e.m.queue.Set(float64(n))
	if err := e.st.save(e.cfg.StateDir); err != nil {
		e.once(causeState, "cannot save state; a restart may resend or forget", "dir", e.cfg.StateDir, "err", err)
	}
}

// nextDue is when tick has work next (zero: nothing waits).
func (e *engine) nextDue() time.Time {
	var t time.Time
	early := func(x time.Time) {
		if t.IsZero() || x.Before(t) {
			t = x
		}
	}
	for _, p := range e.st.Pending {
		early(p.Next)
	}
	for _, d := range e.st.Digests {
		early(d.Due)
	}
	for _, m := range e.st.Outbox {
		early(m.Next)
	}
	return t
}

// reloadOptOut re-reads the opt-out list when its file changed: admins
// edit it without restarting the receiver.
func (e *engine) reloadOptOut() {
	if e.cfg.OptOutFile == "" {
		return
	}
	fi, err := os.Stat(e.cfg.OptOutFile)
	if err != nil {
		if !os.IsNotExist(err) {
			e.once(causeOptOutFile, "cannot read the opt-out list; keeping the last one", "file", e.cfg.OptOutFile, "err", err)
		}
		return
	}
	if fi.ModTime().Equal(e.optOutStamp) && e.optOut != nil {
		return
	}
	b, err := os.ReadFile(e.cfg.OptOutFile)
	if err != nil {
		e.once(causeOptOutFile, "cannot read the opt-out list; keeping the last one", "file", e.cfg.OptOutFile, "err", err)
		return
	}
	e.optOut = parseOptOut(b)
	e.optOutStamp = fi.ModTime()
}

// parseOptOut reads one user name a line; # starts a comment.
func parseOptOut(b []byte) map[string]bool {
	out := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line, _, _ := strings.Cut(sc.Text(), "#")
		if u := strings.TrimSpace(line); u != "" {
			out[u] = true
		}
	}
	return out
}
