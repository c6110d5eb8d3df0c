package slurmcli

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// fakeBin is a directory of fake Slurm commands: small sh scripts that log
// each run and print fixture files, fail or hang, so the runner and the
// cache are tested without slurmctld.
type fakeBin struct {
	t   testing.TB
	Dir string
	Log string
}

func newFakeBin(t testing.TB) *fakeBin {
	t.Helper()
	if _, err := os.Stat("/bin/sh"); err != nil {
		t.Skip("no /bin/sh for the fake Slurm commands")
	}
	d := t.TempDir()
	b := &fakeBin{t: t, Dir: filepath.Join(d, "bin"), Log: filepath.Join(d, "log")}
	for _, p := range []string{b.Dir, b.Log} {
		if err := os.Mkdir(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return b
}

// script writes command name: it logs "<args>" to Log/name, then runs body.
func (b *fakeBin) script(name, body string) {
	b.t.Helper()
	s := "#!/bin/sh\necho \"$*\" >> '" + filepath.Join(b.Log, name) + "'\n" + body + "\n"
	if err := os.WriteFile(filepath.Join(b.Dir, name), []byte(s), 0o755); err != nil {
		b.t.Fatal(err)
	}
}

// fixtures makes the usual four sources print the 22.05 "running" capture;
// squeue and sinfo answer --json with JSON, anything else with text. A file
// named fail-<name> in Log makes that command fail as with slurmctld down.
func (b *fakeBin) fixtures(when string) {
	b.t.Helper()
	abs, err := filepath.Abs(fixtures)
	if err != nil {
		b.t.Fatal(err)
	}
	f := func(n string) string { return "'" + filepath.Join(abs, n) + "'" }
	failCheck := b.failCheck
	b.script("squeue", failCheck("squeue")+`case "$1" in --json) exec cat `+f("squeue-"+when+".json")+`;; *) exec cat `+f("squeue-r-"+when+".txt")+`;; esac`)
	b.script("sinfo", failCheck("sinfo")+"exec cat "+f("sinfo-"+when+".json"))
	b.script("scontrol", failCheck("scontrol")+"exec cat "+f("scontrol-show-node-o-"+when+".txt"))
	b.script("sshare", failCheck("sshare")+"exec cat "+f("sshare-"+when+".txt"))
	b.script("sdiag", failCheck("sdiag")+"exec cat "+f("sdiag-"+when+".txt"))
}

// failCheck is script text that fails like a down slurmctld while the
// file fail-<name> exists.
func (b *fakeBin) failCheck(name string) string {
	return "if [ -e '" + filepath.Join(b.Log, "fail-"+name) + "' ]; then echo '" + name +
		": error: Unable to contact slurm controller (connect failure)' >&2; exit 1; fi\n"
}

func (b *fakeBin) setFail(name string, fail bool) {
	p := filepath.Join(b.Log, "fail-"+name)
	if fail {
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			b.t.Fatal(err)
		}
	} else {
		os.Remove(p)
	}
}

// runs returns the argument lines each run of name logged.
func (b *fakeBin) runs(name string) []string {
	data, err := os.ReadFile(filepath.Join(b.Log, name))
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		b.t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
}

// hang makes name start a grandchild, note both pids, and sleep.
func (b *fakeBin) hang(name string) {
	b.script(name, "sleep 1000 &\necho $! > '"+filepath.Join(b.Log, name+".child")+"'\necho $$ > '"+
		filepath.Join(b.Log, name+".pid")+"'\nwait")
}

// hungPIDs waits (bounded) until a hanging command noted its pids.
func (b *fakeBin) hungPIDs(name string) []int {
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
	// Whatever the test's outcome, leave no sleeping process behind.
	b.t.Cleanup(func() {
		for _, p := range pids {
			if !gone(p) {
				syscall.Kill(p, syscall.SIGKILL)
			}
		}
	})
	return pids
}

// gone reports whether pid has exited (a zombie waiting for a reaper that
// this container may lack counts as exited).
func gone(pid int) bool {
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

// waitGone waits (bounded, generous for a loaded machine) for pids to exit.
func waitGone(pids []int) bool {
	for i := 0; i < 3000; i++ {
		all := true
		for _, p := range pids {
			if !gone(p) {
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
