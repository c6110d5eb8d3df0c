// SPDX-License-Identifier: Apache-2.0

// Package slurmclitest provides fake Slurm commands for tests: small sh
// scripts that log each run and print fixture files, fail like a down
// slurmctld, or hang, so the runner, the cache and the cluster collectors
// are tested without slurmctld.
package slurmclitest

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Bin is a directory of fake Slurm commands (Dir, for Runner.BinDir) and
// the directory their runs are logged in (Log).
type Bin struct {
	t   testing.TB
	Dir string
	Log string
}

// New makes an empty Bin under t's temporary directory; it skips the test
// where there is no /bin/sh.
func New(t testing.TB) *Bin {
	t.Helper()
	if _, err := os.Stat("/bin/sh"); err != nil {
		t.Skip("no /bin/sh for the fake Slurm commands")
	}
	d := t.TempDir()
	b := &Bin{t: t, Dir: filepath.Join(d, "bin"), Log: filepath.Join(d, "log")}
	for _, p := range []string{b.Dir, b.Log} {
		if err := os.Mkdir(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return b
}

// Script (re)writes command name: it logs "<args>" to Log/name, fails as
// with slurmctld down while SetFail(name, true) holds, then runs body. The
// file is renamed into place so a rewrite never shows a half-written script.
func (b *Bin) Script(name, body string) {
	b.t.Helper()
	s := "#!/bin/sh\necho \"$*\" >> '" + filepath.Join(b.Log, name) + "'\n" +
		"if [ -e '" + b.failFile(name) + "' ]; then echo '" + name +
		": error: Unable to contact slurm controller (connect failure)' >&2; exit 1; fi\n" + body + "\n"
	tmp := filepath.Join(b.Dir, "."+name)
	if err := os.WriteFile(tmp, []byte(s), 0o755); err != nil {
		b.t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(b.Dir, name)); err != nil {
		b.t.Fatal(err)
	}
}

// FindSep is sh text that sets SEP to the field separator a run asked for
// (slurmcli.NewSeparator): sacct's --delimiter=, or what squeue's -o
// format puts between %A and %F, or its -O format after "JobArrayID:0".
const FindSep = `SEP='|'; for a in "$@"; do case "$a" in --delimiter=*) SEP=${a#--delimiter=};; ` +
	`%A*) SEP=${a#%A}; SEP=${SEP%%%F*};; JobArrayID:0*) SEP=${a#JobArrayID:0}; SEP=${SEP%%,*};; esac; done`

// ToSep returns an sh filter (after FindSep) that prints a capture taken
// with '|' between n fields as the run asked for: the first n-1 '|' of each
// line become SEP (the last field, a job name, may hold '|').
func ToSep(n int) string {
	return `awk -v n=` + strconv.Itoa(n) + ` -v sep="$SEP" '{ out = ""; for (i = 1; i < n; i++) { j = index($0, "|"); ` +
		`if (!j) break; out = out substr($0, 1, j - 1) sep; $0 = substr($0, j + 1) } print out $0 }'`
}

// squeueOFields is the number of fields of slurmcli's squeue -O text form.
const squeueOFields = 18

// Fixtures makes squeue, sinfo, scontrol, sshare and sdiag print the
// captures named <command>-...-<when> in dir (testdata/slurm/<version>):
// squeue answers --json with JSON and anything else with its -O text,
// printed with the run's separator (ToSep); scontrol answers show reservation and show licenses (text, or JSON with
// --json) and else show node -o. Where a version has no --json, the
// capture is what it said instead (<file>.json.stderr, exit status 1); a
// capture that does not exist makes the command fail. sacct is left to Sacct: its queries reach slurmdbd, so
// tests opt in.
func (b *Bin) Fixtures(dir, when string) {
	b.t.Helper()
	f := b.quoted(dir)
	b.Script("squeue", FindSep+"\n"+`case "$1" in --json) exec cat `+f("squeue-"+when+".json")+`;; *) `+ToSep(squeueOFields)+` `+f("squeue-O-"+when+".txt")+`;; esac`)
	b.Script("sinfo", "exec cat "+f("sinfo-"+when+".json"))
	b.Script("scontrol", `json() { [ -e "$1.stderr" ] && [ ! -e "$1" ] && { cat "$1.stderr" >&2; exit 1; }; exec cat "$1"; }
case "$*" in
*reservation*--json*) json `+f("scontrol-show-res-"+when+".json")+`;;
*reservation*) exec cat `+f("scontrol-show-res-"+when+".txt")+`;;
*licenses*--json*) json `+f("scontrol-show-lic-"+when+".json")+`;;
*licenses*) exec cat `+f("scontrol-show-lic-"+when+".txt")+`;;
*) exec cat `+f("scontrol-show-node-o-"+when+".txt")+`;;
esac`)
	b.Script("sshare", "exec cat "+f("sshare-"+when+".txt"))
	b.Script("sdiag", "exec cat "+f("sdiag-"+when+".txt"))
}

// Sacct makes sacct print dir's sacct -X capture. A capture with its
// header line is printed as it is; the 22.05 captures (taken with -n and
// a long --format) are cut to the columns jobscope asks for, under the
// header sacct prints without -n. It ignores -S/-E: the counter filters.
func (b *Bin) Sacct(dir, when string) {
	b.t.Helper()
	file := b.quoted(dir)("sacct-X-" + when + ".txt")
	b.Script("sacct", "if head -1 "+file+" | grep -q '^JobID'; then exec cat "+file+"; fi\n"+
		"echo 'JobID|JobIDRaw|State|Partition|Account|Submit|End'\n"+
		"exec awk -F'|' -v OFS='|' '{print $1,$2,$10,$8,$7,$13,$15}' "+file)
}

// quoted returns a function naming a file of dir as an absolute,
// single-quoted sh word (the scripts run in any working directory).
func (b *Bin) quoted(dir string) func(string) string {
	b.t.Helper()
	abs, err := filepath.Abs(dir)
	if err != nil {
		b.t.Fatal(err)
	}
	return func(n string) string { return "'" + filepath.Join(abs, n) + "'" }
}

func (b *Bin) failFile(name string) string { return filepath.Join(b.Log, "fail-"+name) }

// SetFail makes name fail like a down slurmctld (fail) or run again.
func (b *Bin) SetFail(name string, fail bool) {
	b.t.Helper()
	if !fail {
		os.Remove(b.failFile(name))
		return
	}
	if err := os.WriteFile(b.failFile(name), nil, 0o644); err != nil {
		b.t.Fatal(err)
	}
}

// Runs returns the argument lines each run of name logged.
func (b *Bin) Runs(name string) []string {
	b.t.Helper()
	data, err := os.ReadFile(filepath.Join(b.Log, name))
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		b.t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
}

// Hang makes name start a grandchild, note both pids, and sleep.
func (b *Bin) Hang(name string) {
	b.t.Helper()
	b.Script(name, "sleep 1000 &\necho $! > '"+filepath.Join(b.Log, name+".child")+"'\necho $$ > '"+
		filepath.Join(b.Log, name+".pid")+"'\nwait")
}

// HungPIDs waits (bounded) until a hanging command noted its pids, and
// kills them at the end of the test whatever its outcome.
func (b *Bin) HungPIDs(name string) []int {
	b.t.Helper()
	var pids []int
	for i := 0; i < 1000 && len(pids) < 2; i++ {
		pids = pids[:0]
		for _, suffix := range []string{".pid", ".child"} {
			data, err := os.ReadFile(filepath.Join(b.Log, name+suffix))
			if err != nil {
				break
			}
			if p, err := strconv.Atoi(strings.TrimSpace(string(data))); err == nil {
				pids = append(pids, p)
			}
		}
		if len(pids) < 2 {
			time.Sleep(10 * time.Millisecond)
		}
	}
	if len(pids) < 2 {
		b.t.Fatalf("%s never noted its pids", name)
	}
	b.t.Cleanup(func() {
		for _, p := range pids {
			if !Gone(p) {
				_ = syscall.Kill(p, syscall.SIGKILL) // gone meanwhile: nothing to do
			}
		}
	})
	return pids
}

// Gone reports whether pid has exited (a zombie waiting for a reaper that
// a container may lack counts as exited).
func Gone(pid int) bool {
	if err := syscall.Kill(pid, 0); err == syscall.ESRCH {
		return true
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && i+2 < len(s) && s[i+2] == 'Z'
}

// WaitGone waits (bounded, generous for a loaded machine) for pids to exit.
func WaitGone(pids []int) bool {
	for i := 0; i < 3000; i++ {
		all := true
		for _, p := range pids {
			if !Gone(p) {
				all = false
			}
		}
		if all {
			return true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return false
}
