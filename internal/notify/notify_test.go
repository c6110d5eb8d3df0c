// SPDX-License-Identifier: Apache-2.0

package notify

import (
	"os"
	"strings"
	"testing"
	"time"
)

// Two alerts of one user within digest_wait make one message; the same
// alerts again within the period make none.
func TestOneMessagePerUserAndPeriod(t *testing.T) {
	f := newFixture(t, live(""), alice("101"), alice("102"))
	f.send(0, firing("JobscopeJobCPUEfficiencyLow", "101", "alice"))
	f.send(10*time.Second, firing("JobscopeJobGPUIdle", "102", "alice"))
	f.tick(30 * time.Second) // digest still open
	if n := len(f.smtp.messages()); n != 0 {
		t.Fatalf("%d messages before digest_wait", n)
	}
	f.tick(time.Minute)
	msgs := f.smtp.messages()
	if len(msgs) != 1 {
		t.Fatalf("%d messages, want 1 digest", len(msgs))
	}
	if got := strings.Join(msgs[0].To, ","); got != "alice@example.org" {
		t.Errorf("sent to %s", got)
	}
	for _, want := range []string{"Subject: [jobscope] c1: jobs 101, 102", "jobscope report 101", "jobscope report 102",
		"CPU efficiency 1.2% on 2 cores over 10m", "holds a GPU it does not use"} {
		if !strings.Contains(unfold(msgs[0].Data), want) {
			t.Errorf("message lacks %q:\n%s", want, msgs[0].Data)
		}
	}
	// Alertmanager resends while firing; a third job of the same alert
	// name comes in: all within the period, so no new message.
	f.setJobs(alice("101"), alice("102"), alice("103"))
	f.send(2*time.Hour, firing("JobscopeJobCPUEfficiencyLow", "101", "alice"), firing("JobscopeJobCPUEfficiencyLow", "103", "alice"))
	f.tick(3 * time.Hour)
	if n := len(f.smtp.messages()); n != 1 {
		t.Fatalf("%d messages after resends in the period, want still 1", n)
	}
	if got := f.messages(resSupressed); got != 2 {
		t.Errorf("suppressed %v, want 2", got)
	}
	if got := f.messages(resSent); got != 1 {
		t.Errorf("sent %v, want 1", got)
	}
	// The ledger survives a restart: a new engine on the same state_dir
	// still holds the alert back.
	f.eng = f.newEngine()
	f.send(4*time.Hour, firing("JobscopeJobCPUEfficiencyLow", "101", "alice"))
	f.tick(5 * time.Hour)
	if n := len(f.smtp.messages()); n != 1 {
		t.Fatalf("%d messages after a restart within the period, want 1", n)
	}
	// After the period, the alert may be mailed again.
	f.send(25*time.Hour, firing("JobscopeJobCPUEfficiencyLow", "101", "alice"))
	f.tick(26 * time.Hour)
	if n := len(f.smtp.messages()); n != 2 {
		t.Fatalf("%d messages after the period, want 2", n)
	}
}

// unfold joins header continuation lines and undoes quoted-printable soft
// breaks, so a test can look for a phrase.
func unfold(s string) string {
	s = strings.ReplaceAll(s, "=\r\n", "")
	s = strings.ReplaceAll(s, "\r\n ", " ")
	s = strings.ReplaceAll(s, "=25", "%")
	s = strings.ReplaceAll(s, "=3D", "=")
	return s
}

func TestDryRunSendsNothing(t *testing.T) {
	f := newFixture(t, "", alice("101")) // dry_run defaults to true
	f.send(0, firing("JobscopeJobGPUIdle", "101", "alice"))
	f.tick(time.Minute)
	if n := len(f.smtp.messages()); n != 0 {
		t.Fatalf("dry run sent %d messages", n)
	}
	if got := f.messages(resDryRun); got != 1 {
		t.Errorf("dry_run counted %v, want 1", got)
	}
}

// The alert's user label says victim; Slurm says the job is alice's: the
// mail goes to alice, and victim's address never appears.
func TestOwnerFromSlurmNotLabel(t *testing.T) {
	f := newFixture(t, live(""), alice("101"))
	a := firing("JobscopeJobGPUIdle", "101", "victim")
	f.send(0, a)
	f.tick(time.Minute)
	msgs := f.smtp.messages()
	if len(msgs) != 1 || len(msgs[0].To) != 1 || msgs[0].To[0] != "alice@example.org" {
		t.Fatalf("messages %+v, want one to alice@example.org", msgs)
	}
	if strings.Contains(msgs[0].Data, "victim@") {
		t.Errorf("victim's address in the mail")
	}
}

// The job's --mail-user is honoured; a job name that plants a second
// MailUser makes the choice ambiguous, and the template applies.
func TestMailUser(t *testing.T) {
	j := alice("101")
	j.MailUser = "a.liddell@uni.example"
	k := alice("102")
	k.Name = "x MailUser=evil@attacker.example MailType=END"
	k.MailUser = "alice@lab.example"
	f := newFixture(t, live(""), j, k)
	f.send(0, firing("JobscopeJobGPUIdle", "101", ""), firing("JobscopeJobOOMKills", "102", ""))
	f.tick(time.Minute)
	got := map[string]bool{}
	for _, m := range f.smtp.messages() {
		got[strings.Join(m.To, ",")] = true
	}
	if !got["a.liddell@uni.example"] || !got["alice@example.org"] || len(got) != 2 {
		t.Errorf("recipients %v, want the job's --mail-user and the template for the ambiguous job", got)
	}
}

// A job id reused by another job (same id, another start time than the
// alert's job_key) gets no mail and no action.
func TestReusedJobID(t *testing.T) {
	j := alice("101")
	j.Start = jobStart + 3600
	f := newFixture(t, live("actions: {JobscopeJobGPUIdle: {action: cancel, grace: 1s}}"), j)
	f.send(0, firing("JobscopeJobGPUIdle", "101", "alice"))
	f.tick(time.Minute)
	f.send(2*time.Hour, firing("JobscopeJobGPUIdle", "101", "alice"))
	f.tick(3 * time.Hour)
	if n := len(f.smtp.messages()); n != 0 {
		t.Fatalf("%d messages for a reused job id", n)
	}
	if got := f.errors(causeMismatch); got != 2 {
		t.Errorf("job_key_mismatch %v, want 2", got)
	}
	if s := f.scancelLog(); s != "" {
		t.Errorf("scancel ran: %q", s)
	}
}

// With the relay down the digest is retried with backoff and delivered
// once the relay is back; the failures are counted.
func TestSMTPDownRetried(t *testing.T) {
	f := newFixture(t, live(""), alice("101"))
	f.smtp.down.Store(true)
	f.send(0, firing("JobscopeJobGPUIdle", "101", "alice"))
	f.tick(time.Minute)
	f.tick(time.Minute + 10*time.Second) // before the backoff: no attempt
	if got := f.errors(causeSMTP); got != 1 {
		t.Fatalf("smtp errors %v after one attempt, want 1", got)
	}
	f.tick(time.Minute + 30*time.Second) // second attempt, still down
	f.smtp.down.Store(false)
	f.eng = f.newEngine() // the outbox survives a restart
	f.tick(time.Minute + 90*time.Second)
	if n := len(f.smtp.messages()); n != 1 {
		t.Fatalf("%d messages after the relay came back, want 1", n)
	}
	if got := f.messages(resSent); got != 1 {
		t.Errorf("sent %v, want 1", got)
	}
}

// A message that never gets through is given up after its last attempt,
// and counted failed, not dropped quietly.
func TestSMTPGivesUpCounted(t *testing.T) {
	f := newFixture(t, live(""), alice("101"))
	f.smtp.down.Store(true)
	f.send(0, firing("JobscopeJobGPUIdle", "101", "alice"))
	for i := 0; i < 10; i++ {
		f.tick(time.Minute + time.Duration(i)*10*time.Minute)
	}
	if got := f.messages(resFailed); got != 1 {
		t.Errorf("failed %v, want 1", got)
	}
	if len(f.eng.st.Outbox) != 0 {
		t.Errorf("outbox keeps %d messages", len(f.eng.st.Outbox))
	}
}

// Slurm down: the lookup is retried and the mail goes out when it answers.
func TestSlurmDownRetried(t *testing.T) {
	f := newFixture(t, live(""), alice("101"))
	f.bin.SetFail("squeue", true)
	f.send(0, firing("JobscopeJobGPUIdle", "101", "alice"))
	if got := f.errors(causeSlurm); got != 1 {
		t.Fatalf("slurm errors %v, want 1", got)
	}
	f.bin.SetFail("squeue", false)
	f.tick(30 * time.Second)
	f.tick(2 * time.Minute)
	if n := len(f.smtp.messages()); n != 1 {
		t.Fatalf("%d messages after Slurm came back, want 1", n)
	}
}

func TestOptOut(t *testing.T) {
	f := newFixture(t, live(""), alice("101"))
	if err := os.WriteFile(f.cfg.OptOutFile, []byte("# users who asked\nalice\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f.send(0, firing("JobscopeJobGPUIdle", "101", "alice"))
	f.tick(time.Minute)
	if n := len(f.smtp.messages()); n != 0 {
		t.Fatalf("opted-out user got %d messages", n)
	}
	if got := f.messages(resOptedOut); got != 1 {
		t.Errorf("opted_out %v, want 1", got)
	}
}

// cancel: after the warning and the grace period, a still-firing alert
// cancels its job, and only its job; owner and admins are told.
func TestCancelAfterGrace(t *testing.T) {
	f := newFixture(t, live("actions: {JobscopeJobGPUIdle: {action: cancel, grace: 2h}}"), alice("101"), alice("102"))
	f.send(0, firing("JobscopeJobGPUIdle", "101", "alice"), firing("JobscopeJobCPUEfficiencyLow", "102", "alice"))
	f.tick(time.Minute) // the warning
	f.send(time.Hour, firing("JobscopeJobGPUIdle", "101", "alice"))
	if s := f.scancelLog(); s != "" {
		t.Fatalf("scancel before the grace period: %q", s)
	}
	f.send(3*time.Hour, firing("JobscopeJobGPUIdle", "101", "alice"), firing("JobscopeJobCPUEfficiencyLow", "102", "alice"))
	f.tick(3*time.Hour + time.Second)
	if s := f.scancelLog(); s != "101\n" {
		t.Fatalf("scancel runs %q, want exactly job 101", s)
	}
	msgs := f.smtp.messages()
	if len(msgs) != 2 {
		t.Fatalf("%d messages, want the digest and the cancel notice", len(msgs))
	}
	if got := strings.Join(msgs[1].To, ","); got != "alice@example.org,root@localhost" {
		t.Errorf("cancel notice to %s", got)
	}
	// Sent again while firing: not cancelled twice.
	f.send(5*time.Hour, firing("JobscopeJobGPUIdle", "101", "alice"))
	if s := f.scancelLog(); s != "101\n" {
		t.Errorf("scancel runs %q after a resend", s)
	}
}

// A resolved alert forgets the job: the grace period starts again.
func TestResolvedResetsGrace(t *testing.T) {
	f := newFixture(t, live("actions: {JobscopeJobGPUIdle: {action: cancel, grace: 2h}}"), alice("101"))
	f.send(0, firing("JobscopeJobGPUIdle", "101", "alice"))
	f.tick(time.Minute)
	r := firing("JobscopeJobGPUIdle", "101", "alice")
	r.Firing = false
	f.send(time.Hour, r)
	f.send(3*time.Hour, firing("JobscopeJobGPUIdle", "101", "alice"))
	if s := f.scancelLog(); s != "" {
		t.Fatalf("scancel after a resolve: %q", s)
	}
}

// A hostile job name is escaped in HTML and reaches the text without
// control characters.
func TestHostileJobName(t *testing.T) {
	it := item{Alert: firing("JobscopeJobGPUIdle", "101", "alice"),
		JobName: "<script>alert(1)</script>\x1b[2J\r\nBcc: x@evil\u202e"}
	r := renderDigest("alice", []item{it}, 0, "jobscope report {jobid}", 24*time.Hour)
	if strings.Contains(r.HTML, "<script>") {
		t.Errorf("HTML carries the job name unescaped:\n%s", r.HTML)
	}
	if !strings.Contains(r.HTML, "&lt;script&gt;") {
		t.Errorf("HTML lacks the escaped name:\n%s", r.HTML)
	}
	for _, c := range r.Text {
		if c != '\n' && unsafeRune(c) {
			t.Fatalf("text carries control %U:\n%q", c, r.Text)
		}
	}
	if strings.Contains(r.Text, "\nBcc:") {
		t.Errorf("text has a line the job name started")
	}
	if strings.ContainsAny(r.Subject, "\r\n") {
		t.Errorf("subject %q", r.Subject)
	}
}
