// SPDX-License-Identifier: Apache-2.0

package contrib

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
)

// unitValues returns the values of KEY= lines of a systemd unit.
func unitValues(t *testing.T, path, key string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var vals []string
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, key+"="); ok {
			vals = append(vals, v)
		}
	}
	return vals
}

// TestNodeUnitLeastPrivilege: the node unit runs as its own user with
// ambient capabilities equal to its bounding set, each justified in the
// header comment, and keeps the hardening options. test/e2e/run.sh starts
// jobscope as nobody with exactly this set against real Slurm jobs.
func TestNodeUnitLeastPrivilege(t *testing.T) {
	const unit = "systemd/jobscope.service"
	b, _ := os.ReadFile(unit)
	amb := strings.Fields(strings.Join(unitValues(t, unit, "AmbientCapabilities"), " "))
	bnd := strings.Fields(strings.Join(unitValues(t, unit, "CapabilityBoundingSet"), " "))
	sort.Strings(amb)
	sort.Strings(bnd)
	if len(amb) == 0 || !slices.Equal(amb, bnd) {
		t.Errorf("AmbientCapabilities %v != CapabilityBoundingSet %v", amb, bnd)
	}
	for _, c := range amb {
		if !regexp.MustCompile(`(?m)^#\s+` + c + `\s+\S`).Match(b) {
			t.Errorf("%s has no justification comment (# %s <why>)", c, c)
		}
		if c == "CAP_SYS_ADMIN" || c == "CAP_DAC_OVERRIDE" {
			t.Errorf("%s is not least privilege", c)
		}
	}
	for key, want := range map[string]string{
		"User": "jobscope", "NoNewPrivileges": "yes", "ProtectSystem": "strict",
		"ProtectHome": "yes", "PrivateTmp": "yes", "ProtectKernelTunables": "yes",
	} {
		if got := unitValues(t, unit, key); !slices.Contains(got, want) {
			t.Errorf("%s=%v, want %s", key, got, want)
		}
	}
}

// TestNodeUnitPinDirWritable: ProtectKernelTunables= makes bpffs read-only
// inside the unit and beats a ReadWritePaths= of /sys/fs/bpf itself (the
// ebpf collector then failed under systemd 257: "pin map ...: read-only file
// system"). The writable path must be the pin directory below it, the one
// ExecStart passes as --bpf.pin-path and ExecStartPre hands to jobscope.
func TestNodeUnitPinDirWritable(t *testing.T) {
	const unit = "systemd/jobscope.service"
	b := string(mustRead(t, unit))
	m := regexp.MustCompile(`--bpf\.pin-path=(\S+)`).FindStringSubmatch(b)
	if m == nil {
		t.Fatalf("%s: ExecStart has no --bpf.pin-path", unit)
	}
	pin := m[1]
	if !strings.HasPrefix(pin, "/sys/fs/bpf/") {
		t.Fatalf("pin path %s is not below /sys/fs/bpf", pin)
	}
	var rw []string
	for _, p := range unitValues(t, unit, "ReadWritePaths") {
		// "-": the pin dir may not exist yet when systemd checks the paths.
		rw = append(rw, strings.TrimPrefix(p, "-"))
	}
	if !slices.Contains(rw, pin) {
		t.Errorf("ReadWritePaths=%v lacks the pin dir %s", rw, pin)
	}
	if slices.Contains(rw, "/sys/fs/bpf") {
		t.Errorf("ReadWritePaths=/sys/fs/bpf loses to ProtectKernelTunables=: name the pin dir %s", pin)
	}
	pre := strings.Join(unitValues(t, unit, "ExecStartPre"), "\n")
	for _, want := range []string{"install -d -o jobscope -g jobscope -m 0700 " + pin, "chown -R jobscope:jobscope " + pin} {
		if !strings.Contains(pre, want) {
			t.Errorf("ExecStartPre lacks %q (got %q)", want, pre)
		}
	}
}

func TestControllerUnitHasNoCapabilities(t *testing.T) {
	const unit = "systemd/jobscope-controller.service"
	if got := unitValues(t, unit, "CapabilityBoundingSet"); len(got) != 1 || got[0] != "" {
		t.Errorf("CapabilityBoundingSet=%q, want empty", got)
	}
	if !strings.Contains(string(mustRead(t, unit)), "--mode=controller") {
		t.Errorf("%s: ExecStart lacks --mode=controller", unit)
	}
}

// TestUnitsSurviveRefusedSyscalls: a unit that filters system calls must
// make a refused call fail (SystemCallErrorNumber=) rather than kill the
// process with SIGSYS. When jobscope linked cilium/ebpf's rlimit package,
// whose init() calls bpf() in every mode, the controller unit's filter
// killed the service at every start (status=31/SYS).
func TestUnitsSurviveRefusedSyscalls(t *testing.T) {
	units, _ := filepath.Glob("systemd/*.service")
	if len(units) < 2 {
		t.Fatalf("units: %v", units)
	}
	for _, u := range units {
		if len(unitValues(t, u, "SystemCallFilter")) == 0 {
			continue
		}
		if got := unitValues(t, u, "SystemCallErrorNumber"); len(got) == 0 || got[len(got)-1] == "" || got[len(got)-1] == "kill" {
			t.Errorf("%s: SystemCallFilter= without SystemCallErrorNumber= (got %q): a refused call kills jobscope", u, got)
		}
	}
}

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// posixSh prefers dash, the strictest common /bin/sh, so a bashism fails here.
func posixSh(t *testing.T) string {
	for _, sh := range []string{"dash", "sh"} {
		if p, err := exec.LookPath(sh); err == nil {
			return p
		}
	}
	t.Skip("no sh")
	return ""
}

func runScript(t *testing.T, script string, env ...string) {
	t.Helper()
	cmd := exec.Command(posixSh(t), script)
	cmd.Env = env
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", script, err, out)
	}
}

// TestPrologEpilog runs the shipped scripts the way slurmd does: an
// environment of Slurm variables only.
func TestPrologEpilog(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "jobs")
	env := []string{
		"JOBSCOPE_JOB_PROPS_DIR=" + dir, "PATH=/usr/bin:/bin",
		"SLURM_JOB_ID=42", "SLURM_JOB_USER=alice", "SLURM_JOB_UID=1001", "SLURM_JOB_ACCOUNT=physics",
		"SLURM_JOB_PARTITION=debug", "SLURM_CLUSTER_NAME=c1", "SLURM_JOB_NAME=two words=x",
		"SLURM_JOB_GPUS=0,1", "SLURM_JOB_QOS=", "SLURM_SCRIPT_CONTEXT=prolog_slurmd",
	}
	runScript(t, "slurm/prolog.sh", env...)
	got := string(mustRead(t, filepath.Join(dir, "42")))
	want := "SLURM_JOB_ID=42\nSLURM_JOB_USER=alice\nSLURM_JOB_UID=1001\nSLURM_JOB_ACCOUNT=physics\n" +
		"SLURM_JOB_PARTITION=debug\nSLURM_JOB_NAME=two words=x\nSLURM_CLUSTER_NAME=c1\nSLURM_JOB_GPUS=0,1\n"
	if got != want {
		t.Errorf("props file:\n%s\nwant:\n%s", got, want)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("temporary files left: %v", ents)
	}

	// A newline in a value would forge a key: such a value is dropped.
	runScript(t, "slurm/prolog.sh", "JOBSCOPE_JOB_PROPS_DIR="+dir, "SLURM_JOB_ID=43",
		"SLURM_JOB_NAME=x\nSLURM_JOB_ACCOUNT=forged", "SLURM_JOB_ACCOUNT=real")
	if got := string(mustRead(t, filepath.Join(dir, "43"))); got != "SLURM_JOB_ID=43\nSLURM_JOB_ACCOUNT=real\n" {
		t.Errorf("newline value not dropped: %q", got)
	}
	// Only plain job ids become file names.
	runScript(t, "slurm/prolog.sh", "JOBSCOPE_JOB_PROPS_DIR="+dir, "SLURM_JOB_ID=../x")
	runScript(t, "slurm/prolog.sh", "JOBSCOPE_JOB_PROPS_DIR="+dir)

	runScript(t, "slurm/epilog.sh", "JOBSCOPE_JOB_PROPS_DIR="+dir, "SLURM_JOB_ID=42")
	runScript(t, "slurm/epilog.sh", "JOBSCOPE_JOB_PROPS_DIR="+dir, "SLURM_JOB_ID=43")
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("epilog left %v", ents)
	}
	// The epilog of a job without props, or of a missing directory, succeeds.
	runScript(t, "slurm/epilog.sh", "JOBSCOPE_JOB_PROPS_DIR="+dir+"/none", "SLURM_JOB_ID=44")
}

// Slurm 26.05: the prolog links the job's SLUID to its props file (the
// cgroup directory may be named by either); the epilog removes the link.
func TestPrologSLUID(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "jobs")
	env := []string{"JOBSCOPE_JOB_PROPS_DIR=" + dir, "PATH=/usr/bin:/bin", "SLURM_JOB_ID=45",
		"SLURM_JOB_SLUID=sDVNM87TZNTA00", "SLURM_JOB_START_TIME=1795000000", "SLURM_JOB_ACCOUNT=physics"}
	runScript(t, "slurm/prolog.sh", env...)
	got := string(mustRead(t, filepath.Join(dir, "sDVNM87TZNTA00")))
	want := "SLURM_JOB_ID=45\nSLURM_JOB_ACCOUNT=physics\nSLURM_JOB_SLUID=sDVNM87TZNTA00\nSLURM_JOB_START_TIME=1795000000\n"
	if got != want {
		t.Errorf("props through the SLUID link:\n%s\nwant:\n%s", got, want)
	}
	// Nothing but a SLUID becomes a file name.
	for _, bad := range []string{"../../x", "sDVNM87TZNTAI0", "sdvnm87tznta00", "sDVNM87TZNTA0"} {
		runScript(t, "slurm/prolog.sh", "JOBSCOPE_JOB_PROPS_DIR="+dir, "SLURM_JOB_ID=46", "SLURM_JOB_SLUID="+bad)
	}
	ents, _ := os.ReadDir(dir)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if strings.Join(names, ",") != "45,46,sDVNM87TZNTA00" {
		t.Errorf("props dir holds %v", names)
	}
	// Another job's epilog with the same SLUID value leaves the link alone.
	runScript(t, "slurm/epilog.sh", "JOBSCOPE_JOB_PROPS_DIR="+dir, "SLURM_JOB_ID=46", "SLURM_JOB_SLUID=sDVNM87TZNTA00")
	if _, err := os.Lstat(filepath.Join(dir, "sDVNM87TZNTA00")); err != nil {
		t.Error("epilog of job 46 removed job 45's SLUID link")
	}
	runScript(t, "slurm/epilog.sh", "JOBSCOPE_JOB_PROPS_DIR="+dir, "SLURM_JOB_ID=45", "SLURM_JOB_SLUID=sDVNM87TZNTA00")
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("epilog left %v", ents)
	}
}

// TestReportEpilog runs the job-end report script as slurmd would, with a
// stand-in for jobscope that records how it was called. It needs root
// (the script runs the report as the job's user through runuser).
func TestReportEpilog(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("runs the report as another user through runuser: needs root")
	}
	if _, err := exec.LookPath("runuser"); err != nil {
		t.Skip("no runuser")
	}
	dir := t.TempDir()
	os.Chmod(filepath.Dir(dir), 0o755) // the user must reach the stand-in and the work dir
	work := filepath.Join(dir, "work")
	os.Mkdir(work, 0o777)
	os.Chmod(work, 0o1777)
	os.Chmod(dir, 0o755)
	bin := filepath.Join(dir, "jobscope")
	// The stand-in writes its arguments where --output points, as the user.
	os.WriteFile(bin, []byte("#!/bin/sh\nfor a; do case $a in --output=*) out=${a#--output=};; esac; done\n"+
		"{ id -un; printf '%s\\n' \"$@\"; } > \"$out\"\n"), 0o755)
	conf := filepath.Join(dir, "epilog.conf")
	env := func(job, user string) []string {
		return []string{"JOBSCOPE_REPORT_EPILOG_CONF=" + conf, "SLURM_JOB_ID=" + job, "SLURM_JOB_USER=" + user,
			"SLURM_JOB_WORK_DIR=" + work, "SLURM_SCRIPT_CONTEXT=epilog_slurmd"}
	}
	// The epilog starts the report in the background: up to 60 s for it
	// to write (5 s was short for starting processes on a loaded machine;
	// a report that comes returns at once).
	wait := func(name string) string {
		for i := 0; i < 1200; i++ {
			if b, err := os.ReadFile(filepath.Join(work, name)); err == nil && len(b) > 0 {
				return string(b)
			}
			time.Sleep(50 * time.Millisecond)
		}
		return ""
	}
	// Off by default: no conf file, or ENABLE other than yes.
	runScript(t, "slurm/epilog.d/jobscope-report.sh", env("41", "nobody")...)
	os.WriteFile(conf, []byte("ENABLE=no\nBIN="+bin+"\n"), 0o644)
	runScript(t, "slurm/epilog.d/jobscope-report.sh", env("41", "nobody")...)
	time.Sleep(300 * time.Millisecond)
	if ents, _ := os.ReadDir(work); len(ents) != 0 {
		t.Fatalf("report written while off: %v", ents)
	}
	os.WriteFile(conf, []byte("ENABLE=yes\nBIN="+bin+"\nCONFIG=/etc/site.yml\nFORMAT=html\n"), 0o644)
	runScript(t, "slurm/epilog.d/jobscope-report.sh", env("42", "nobody")...)
	got := wait("jobscope-42.html")
	for _, want := range []string{"nobody\nreport\n", "--config=/etc/site.yml", "--format=html", "--reused=latest", "--ended", "\n42\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("report call %q lacks %q", got, want)
		}
	}
	// Ids and user names that are not plain are refused.
	runScript(t, "slurm/epilog.d/jobscope-report.sh", env("43;x", "nobody")...)
	runScript(t, "slurm/epilog.d/jobscope-report.sh", env("44", "-nobody")...)
	time.Sleep(300 * time.Millisecond)
	if ents, _ := os.ReadDir(work); len(ents) != 1 {
		t.Errorf("files in the work dir: %v", ents)
	}
}
