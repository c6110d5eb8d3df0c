// SPDX-License-Identifier: Apache-2.0

package report

import (
	"strings"
	"testing"

	"github.com/jobscope/jobscope/slurmcli"
	"github.com/jobscope/jobscope/slurmcli/slurmclitest"
)

// slurmdbdDown is what sacct prints when slurmctld's accounting daemon
// does not answer (Slurm 22.05 to 24.11 word it alike), with exit status 1.
const slurmdbdDown = `echo 'sacct: error: _open_persist_conn: failed to open persistent connection to host:localhost:6819: Connection refused' >&2
echo 'sacct: error: slurm_persist_conn_open: failed to open persistent connection to host:localhost:6819: Connection refused' >&2
echo 'sacct: error: Sending PersistInit msg: Connection refused' >&2
echo 'sacct: error: Problem talking to the database: Connection refused' >&2
exit 1
`

// TestSacctTroubleIsOneNote: a failing sacct costs one readable sentence,
// whatever it wrote to stderr, and its raw lines never reach the report.
func TestSacctTroubleIsOneNote(t *testing.T) {
	for name, c := range map[string]struct{ script, want string }{
		"slurmdbd down": {slurmdbdDown, "sacct: Slurm accounting is not reachable (slurmdbd); submit time"},
		"no accounting": {"echo 'sacct: error: Slurm accounting storage is disabled' >&2\nexit 1\n",
			"sacct: Slurm accounting storage is disabled on this cluster; submit time"},
		"unknown failure": {"echo 'sacct: fatal: something \x1b[2J new' >&2\necho 'second line' >&2\nexit 3\n",
			"sacct failed (exit status 3): fatal: something \x1b[2J new; submit time"},
	} {
		t.Run(name, func(t *testing.T) {
			b := slurmclitest.New(t)
			b.Script("sacct", c.script)
			o := scenarioOptions(t, nil)
			o.Slurm = &slurmcli.Runner{BinDir: b.Dir}
			o.Config = DefaultConfig()
			r, err := newRunner(o)
			if err != nil {
				t.Fatal(err)
			}
			recs, note, err := r.sacctRecords(t.Context(), "4242", "c1")
			if err != nil || recs != nil {
				t.Fatalf("sacct=auto: records %v, error %v", recs, err)
			}
			if !strings.HasPrefix(note, c.want) || strings.Contains(note, "\n") || strings.Contains(note, "Problem talking") ||
				strings.Contains(note, "second line") {
				t.Errorf("note %q, want one line starting %q", note, c.want)
			}
			// With --sacct=always the same sentence is the error.
			r.cfg.Sacct = "always"
			if _, _, err := r.sacctRecords(t.Context(), "4242", "c1"); err == nil ||
				!strings.Contains(err.Error(), strings.SplitN(c.want, ";", 2)[0]) || strings.Contains(err.Error(), "\n") {
				t.Errorf("sacct=always: error %v", err)
			}
		})
	}
}

// TestSlurmdbdDownInReport: the whole report of a job with slurmdbd down
// says so once in its notes.
func TestSlurmdbdDownInReport(t *testing.T) {
	srv := loadReplay(t).server(t)
	b := slurmclitest.New(t)
	b.Script("sacct", slurmdbdDown)
	o := scenarioOptions(t, nil)
	o.Slurm = &slurmcli.Runner{BinDir: b.Dir}
	out, errb, code := runCLI(t, o, "--prometheus.url="+srv.URL, "4242")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errb)
	}
	if n := strings.Count(out, "Slurm accounting is not reachable (slurmdbd)"); n != 1 {
		t.Errorf("the note is there %d times:\n%s", n, out)
	}
	for _, raw := range []string{"persist", "Problem talking", "sacct: error"} {
		if strings.Contains(out, raw) {
			t.Errorf("raw sacct error %q in the report:\n%s", raw, out)
		}
	}
}

// TestSacctPartialAnswer: records sacct printed twice are left out with a
// note, and the others are used.
func TestSacctPartialAnswer(t *testing.T) {
	b := slurmclitest.New(t)
	line := func(id, user, name string) string {
		return "echo '" + id + "|" + user + "|chemistry|cpu|c1|COMPLETED|0:0|2026-02-20T07:59:00|2026-02-20T08:00:00|2026-02-20T09:00:00|3600|120|4||1|n03|03:48:00|14400|" + name + "'\n"
	}
	b.Script("sacct", slurmclitest.FindSep+"\n{\necho 'JobIDRaw|User|Account|Partition|Cluster|State|ExitCode|Submit|Start|End|ElapsedRaw|TimelimitRaw|AllocCPUS|AllocTRES|NNodes|NodeList|TotalCPU|CPUTimeRAW|JobName'\n"+
		line("777", "bob", "a")+line("777", "victim", "b")+line("778", "dave", "c")+"} | "+slurmclitest.ToSep(19))
	o := scenarioOptions(t, nil)
	o.Slurm = &slurmcli.Runner{BinDir: b.Dir}
	o.Config = DefaultConfig()
	r, err := newRunner(o)
	if err != nil {
		t.Fatal(err)
	}
	recs, note, err := r.sacctRecords(t.Context(), "777", "c1")
	if err != nil || len(recs) != 1 || recs[0].User != "dave" || !strings.Contains(note, "left out") {
		t.Fatalf("records %+v, note %q, err %v", recs, note, err)
	}
}
