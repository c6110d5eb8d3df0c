// SPDX-License-Identifier: Apache-2.0

package contrib

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The maintainer scripts run under any /bin/sh: dpkg's dash, rpm's bash.
func TestPackagingScriptsParse(t *testing.T) {
	sh := posixSh(t)
	files, _ := filepath.Glob("packaging/scripts/*.sh")
	files = append(files, "packaging/version.sh")
	if len(files) != 4 {
		t.Fatalf("packaging scripts: %v", files)
	}
	for _, f := range files {
		if out, err := exec.Command(sh, "-n", f).CombinedOutput(); err != nil {
			t.Errorf("%s -n %s: %v\n%s", sh, f, err, out)
		}
	}
}

// version.sh turns git describe into versions that dpkg and rpm sort in
// commit order (rpm's check runs where Debian's rpm is installed).
func TestPackageVersion(t *testing.T) {
	for _, tool := range []string{"git", "dpkg"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed", tool)
		}
	}
	repo := t.TempDir()
	script, err := os.ReadFile("packaging/version.sh")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(repo, "contrib/packaging"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repo, "contrib/packaging/version.sh"), script, 0o755); err != nil {
		t.Fatal(err)
	}
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false", "-c", "tag.gpgsign=false"}, args...)...)
		cmd.Dir = repo
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	version := func() string {
		t.Helper()
		out, err := exec.Command("sh", filepath.Join(repo, "contrib/packaging/version.sh")).Output()
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(out))
	}
	commit := func() string {
		git("commit", "-q", "--allow-empty", "-m", "c")
		return git("rev-parse", "--short", "HEAD")
	}
	git("init", "-q")
	git("add", ".")
	var got []string
	h := commit()
	want := []string{"0.0.0+1.g" + h}
	got = append(got, version())
	h = commit()
	want = append(want, "0.0.0+2.g"+h)
	got = append(got, version())
	git("tag", "v1.0.0-rc1")
	want = append(want, "1.0.0~rc1")
	got = append(got, version())
	commit()
	git("tag", "v1.0.0")
	want = append(want, "1.0.0")
	got = append(got, version())
	h = commit()
	want = append(want, "1.0.0+1.g"+h)
	got = append(got, version())
	if err := os.WriteFile(filepath.Join(repo, "contrib/packaging/version.sh"), append(script, '\n'), 0o755); err != nil {
		t.Fatal(err)
	}
	want = append(want, "1.0.0+1.g"+h+".dirty")
	got = append(got, version())
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("step %d: version %q, want %q", i, got[i], want[i])
		}
		if i > 0 {
			if err := exec.Command("dpkg", "--compare-versions", got[i-1], "lt", got[i]).Run(); err != nil {
				t.Errorf("dpkg does not sort %q before %q", got[i-1], got[i])
			}
			if _, err := exec.LookPath("rpm"); err == nil {
				out, err := exec.Command("rpm", "--eval", "%{lua:print(rpm.vercmp('"+got[i-1]+"','"+got[i]+"'))}").Output()
				if err != nil || strings.TrimSpace(string(out)) != "-1" {
					t.Errorf("rpm does not sort %q before %q: %q %v", got[i-1], got[i], out, err)
				}
			}
		}
	}
}
