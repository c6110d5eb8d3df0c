// SPDX-License-Identifier: Apache-2.0

package notify

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/jobscope/jobscope/slurmcli"
	"github.com/jobscope/jobscope/slurmcli/slurmclitest"
)

// fakeJob is a job the fake squeue and scontrol know.
type fakeJob struct {
	ID, User string
	UID      int
	State    string
	Start    int64
	Name     string
	MailUser string
}

type fixture struct {
	t     *testing.T
	cfg   *Config
	bin   *slurmclitest.Bin
	smtp  *fakeSMTP
	eng   *engine
	start time.Time
}

// newFixture builds an engine on a fake Slurm and a fake relay; extra is
// YAML added to the config.
func newFixture(t *testing.T, extra string, jobs ...fakeJob) *fixture {
	t.Helper()
	f := &fixture{t: t, bin: slurmclitest.New(t), smtp: newFakeSMTP(t), start: time.Unix(1_800_000_000, 0)}
	dir := t.TempDir()
	tok := filepath.Join(dir, "token")
	if err := os.WriteFile(tok, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	yml := fmt.Sprintf(`webhook_token_file: %s
smtp: {host: 127.0.0.1, port: %d, starttls: none, from: "jobscope@cluster.example", timeout: 2s}
address_template: "{user}@example.org"
state_dir: %s
opt_out_file: %s
slurm: {bin_dir: %s}
admins: ["root@localhost"]
retry: {initial: 30s, max: 5m, attempts: 4}
%s`, tok, f.smtp.port, filepath.Join(dir, "state"), filepath.Join(dir, "optout"), f.bin.Dir, extra)
	cfg, err := ParseConfig([]byte(yml))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(cfg.StateDir, 0o700); err != nil {
		t.Fatal(err)
	}
	f.cfg = cfg
	f.setJobs(jobs...)
	f.bin.Script("scancel", "exit 0")
	f.eng = f.newEngine()
	return f
}

func (f *fixture) newEngine() *engine {
	snd, err := newSMTPSender(f.cfg.SMTP)
	if err != nil {
		f.t.Fatal(err)
	}
	r := &slurmcli.Runner{BinDir: f.cfg.Slurm.BinDir, Timeout: 10 * time.Second}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	e := newEngine(f.cfg, log, newMetrics(), r, snd)
	st, err := loadState(f.cfg.StateDir)
	if err != nil {
		f.t.Fatal(err)
	}
	e.st = st
	return e
}

// setJobs (re)writes the fake squeue and scontrol: squeue answers with
// the delimiter its --format carries, as the real one does.
func (f *fixture) setJobs(jobs ...fakeJob) {
	var sq, sc strings.Builder
	for _, j := range jobs {
		start := time.Unix(j.Start, 0).Format("2006-01-02T15:04:05")
		fmt.Fprintf(&sq, "*--jobs=%s\\ *) printf '%%s' '%s' \"$d\" '%s' \"$d\" '%d' \"$d\" '%s' \"$d\" '%s' \"$d\"; printf '%%s\\n' %s;;\n",
			j.ID, j.ID, j.User, j.UID, j.State, start, shq(j.Name))
		line := fmt.Sprintf("JobId=%s JobName=%s UserId=%s(%d) JobState=%s", j.ID, j.Name, j.User, j.UID, j.State)
		if j.MailUser != "" {
			line += " MailUser=" + j.MailUser + " MailType=BEGIN"
		}
		fmt.Fprintf(&sc, "*\\ %s) printf '%%s\\n' %s;;\n", j.ID, shq(line))
	}
	f.bin.Script("squeue", `fmt=""; for a in "$@"; do case "$a" in --format=*) fmt="${a#--format=}";; esac; done
d="${fmt#%A}"; d="${d%%%u*}"
case "$* " in
`+sq.String()+`*) echo "slurm_load_jobs error: Invalid job id specified" >&2; exit 1;;
esac`)
	f.bin.Script("scontrol", `case "$*" in
`+sc.String()+`*) exit 1;;
esac`)
}

func shq(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func (f *fixture) at(d time.Duration) time.Time { return f.start.Add(d) }

func (f *fixture) send(d time.Duration, alerts ...Alert) {
	f.eng.process(context.Background(), f.at(d), alerts)
}

func (f *fixture) tick(d time.Duration) { f.eng.tick(context.Background(), f.at(d)) }

func (f *fixture) messages(result string) float64 {
	return testutil.ToFloat64(f.eng.m.messages.WithLabelValues(result))
}

func (f *fixture) errors(cause string) float64 {
	return testutil.ToFloat64(f.eng.m.errors.WithLabelValues(cause))
}

func (f *fixture) scancelLog() string {
	b, _ := os.ReadFile(filepath.Join(f.bin.Log, "scancel"))
	return string(b)
}

const jobStart = 1_799_990_000

func firing(name, jobID, user string) Alert {
	return Alert{Name: name, Firing: true, JobID: jobID, JobKey: "c1/" + jobID + "/" + fmt.Sprint(jobStart),
		Cluster: "c1", Severity: "warning", Summary: name + " on job " + jobID, Value: "CPU efficiency 1.2% on 2 cores over 10m",
		ValueRaw: "0.012", Description: "labelled user " + user}
}

func alice(id string) fakeJob {
	return fakeJob{ID: id, User: "alice", UID: 1001, State: "RUNNING", Start: jobStart, Name: "train"}
}

func live(extra string) string { return "dry_run: false\n" + extra }
