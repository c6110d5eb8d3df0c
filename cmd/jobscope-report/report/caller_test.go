// SPDX-License-Identifier: Apache-2.0

package report

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// passwdName reads the uid's name from /etc/passwd itself, not through
// os/user: "" when there is no entry.
func passwdName(t *testing.T, uid int) string {
	t.Helper()
	f, err := os.Open("/etc/passwd")
	if err != nil {
		t.Skipf("no /etc/passwd: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if p := strings.Split(sc.Text(), ":"); len(p) > 2 && p[2] == strconv.Itoa(uid) {
			return p[0]
		}
	}
	return ""
}

// TestCallerIgnoresEnvironment: $USER and $LOGNAME name someone else; the
// caller is still the process's uid. Run it in both builds:
// go test and CGO_ENABLED=0 go test -tags nogpu.
func TestCallerIgnoresEnvironment(t *testing.T) {
	t.Setenv("USER", "alice")
	t.Setenv("LOGNAME", "alice")
	uid := os.Getuid()
	want := passwdName(t, uid)
	if want == "" {
		want = "#" + strconv.Itoa(uid)
	}
	if want == "alice" {
		t.Skip("the test runs as alice, the name it sets in $USER")
	}
	if got := callerName(uid, user.LookupId); got != want {
		t.Errorf("caller %q, want %q", got, want)
	}
}

// TestCallerWithoutName: a uid that the user database does not know (an
// LDAP user seen by the static build) is its number, never $USER.
func TestCallerWithoutName(t *testing.T) {
	t.Setenv("USER", "alice")
	unknown := func(id string) (*user.User, error) { return nil, user.UnknownUserIdError(4242) }
	if got := callerName(4242, unknown); got != "#4242" {
		t.Errorf("caller %q, want #4242", got)
	}
	broken := func(id string) (*user.User, error) { return nil, errors.New("nss: timeout") }
	if got := callerName(4242, broken); got != "#4242" {
		t.Errorf("caller %q with a failing lookup, want #4242", got)
	}
}

// TestStrangerSeesNoExecutables runs the report as a uid that has no
// passwd entry, with USER naming the job's owner (alice): the owner's
// executables stay hidden. It needs root, to run the test binary under
// that uid.
func TestStrangerSeesNoExecutables(t *testing.T) {
	if os.Getenv("JOBSCOPE_TEST_STRANGER_URL") != "" {
		strangerReport(t)
		return
	}
	if os.Getuid() != 0 {
		t.Skip("needs root to run a process under a uid without a passwd entry")
	}
	const stranger = 54321
	if passwdName(t, stranger) != "" {
		t.Skipf("uid %d has a passwd entry here", stranger)
	}
	srv := loadReplay(t).server(t)
	// The test binary sits in a directory only root may enter.
	dir := t.TempDir()
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	bin := filepath.Join(dir, "report.test")
	b, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), bin, "-test.run=^TestStrangerSeesNoExecutables$", "-test.count=1", "-test.v")
	cmd.Env = []string{"PATH=/usr/bin:/bin", "USER=alice", "LOGNAME=alice", "TMPDIR=/tmp",
		"JOBSCOPE_TEST_STRANGER_URL=" + srv.URL}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: stranger, Gid: stranger}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the report as uid %d: %v\n%s", stranger, err, out)
	}
	if !strings.Contains(string(out), "as #54321") {
		t.Fatalf("the child test did not run:\n%s", out)
	}
}

// strangerReport is the child's side: alice's job 4242, with no
// CurrentUser given, so the caller comes from the process.
func strangerReport(t *testing.T) {
	o := scenarioOptions(t, nil)
	o.CurrentUser = ""
	me := callerName(os.Getuid(), user.LookupId)
	t.Logf("as %s", me)
	out, errb, code := runCLI(t, o, "--prometheus.url="+os.Getenv("JOBSCOPE_TEST_STRANGER_URL"), "4242")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errb)
	}
	if strings.Contains(out, "/home/") || strings.Contains(out, "/usr/bin/perl") {
		t.Errorf("uid %d with USER=alice sees alice's executables:\n%s", os.Getuid(), out)
	}
	if !strings.Contains(out, "Executables are shown to the job's owner only.") {
		t.Errorf("no note that executables are hidden:\n%s", out)
	}
}
