// SPDX-License-Identifier: Apache-2.0

package contrib

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// epilogHost is a job's working directory and an epilog conf file, with
// jobscope stand-ins that can appear in /usr/bin and /usr/local/bin of the
// script's own mount namespace (the host's directories stay untouched).
type epilogHost struct {
	t                  *testing.T
	work, conf         string
	usrBin, usrLocal   string // stand-in directories
	overlayUp, overlay string // /usr/bin's overlay upper and work directories
}

func newEpilogHost(t *testing.T) *epilogHost {
	if os.Getuid() != 0 {
		t.Skip("mounts over /usr/bin in a private namespace and runs runuser: needs root")
	}
	for _, tool := range []string{"runuser", "unshare", "mount"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("no %s", tool)
		}
	}
	dir := t.TempDir()
	os.Chmod(filepath.Dir(dir), 0o755) // nobody must reach the stand-ins and the work dir
	os.Chmod(dir, 0o755)
	h := &epilogHost{t: t, work: filepath.Join(dir, "work"), conf: filepath.Join(dir, "epilog.conf"),
		usrBin: filepath.Join(dir, "usr-bin"), usrLocal: filepath.Join(dir, "usr-local-bin"),
		overlayUp: filepath.Join(dir, "upper"), overlay: filepath.Join(dir, "overlay-work")}
	for _, d := range []string{h.work, h.usrBin, h.usrLocal, h.overlayUp, h.overlay} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.Chmod(h.work, 0o1777)
	return h
}

// standIn puts a jobscope into dir that writes its name and arguments
// where --output points.
func (h *epilogHost) standIn(dir, name string) {
	script := "#!/bin/sh\nfor a; do case $a in --output=*) out=${a#--output=};; esac; done\n" +
		"{ echo " + name + "; printf '%s\\n' \"$@\"; } > \"$out\"\n"
	if err := os.WriteFile(filepath.Join(dir, "jobscope"), []byte(script), 0o755); err != nil {
		h.t.Fatal(err)
	}
}

// run runs the epilog as slurmd would, in a mount namespace where /usr/bin
// holds the host's files plus usrBin's jobscope (or no jobscope at all) and
// /usr/local/bin holds only usrLocal's.
func (h *epilogHost) run(job string) {
	h.t.Helper()
	up := h.overlayUp
	os.RemoveAll(up)
	os.RemoveAll(h.overlay)
	os.Mkdir(h.overlay, 0o755)
	if err := os.Mkdir(up, 0o755); err != nil {
		h.t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(h.usrBin, "jobscope")); err == nil {
		b, _ := os.ReadFile(filepath.Join(h.usrBin, "jobscope"))
		os.WriteFile(filepath.Join(up, "jobscope"), b, 0o755)
	} else if err := exec.Command("mknod", filepath.Join(up, "jobscope"), "c", "0", "0").Run(); err != nil {
		// A whiteout: a jobscope the host may have in /usr/bin is hidden.
		h.t.Fatalf("mknod whiteout: %v", err)
	}
	mounts := fmt.Sprintf("mount -t overlay overlay -o lowerdir=/usr/bin,upperdir=%s,workdir=%s /usr/bin && "+
		"mount --bind %s /usr/local/bin && exec %s %s", up, h.overlay, h.usrLocal, posixSh(h.t),
		"slurm/epilog.d/jobscope-report.sh")
	cmd := exec.Command("unshare", "--mount", "--propagation", "private", "sh", "-c", mounts)
	cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "JOBSCOPE_REPORT_EPILOG_CONF=" + h.conf,
		"SLURM_JOB_ID=" + job, "SLURM_JOB_USER=nobody", "SLURM_JOB_WORK_DIR=" + h.work,
		"SLURM_SCRIPT_CONTEXT=epilog_slurmd"}
	if out, err := cmd.CombinedOutput(); err != nil {
		if strings.Contains(string(out), "mount") {
			h.t.Skipf("cannot mount an overlay on /usr/bin here: %s", out)
		}
		h.t.Fatalf("epilog: %v\n%s", err, out)
	}
}

func (h *epilogHost) report(name string) string {
	b, _ := os.ReadFile(filepath.Join(h.work, name))
	return string(b)
}

// TestReportEpilogFindsPackagedBinary: with no BIN in the conf file, the
// epilog runs the jobscope the packages install (/usr/bin), and a site's
// own build in /usr/local/bin only where no packaged one exists.
func TestReportEpilogFindsPackagedBinary(t *testing.T) {
	h := newEpilogHost(t)
	os.WriteFile(h.conf, []byte("ENABLE=yes\n"), 0o644)
	h.standIn(h.usrBin, "usr-bin")
	h.standIn(h.usrLocal, "usr-local-bin")
	h.run("51")
	if got := h.report("jobscope-51.txt"); !strings.HasPrefix(got, "usr-bin\nreport\n") {
		t.Errorf("with jobscope in /usr/bin and /usr/local/bin, the report came from %q, want /usr/bin's", got)
	}
	os.Remove(filepath.Join(h.usrBin, "jobscope"))
	h.run("52")
	if got := h.report("jobscope-52.txt"); !strings.HasPrefix(got, "usr-local-bin\nreport\n") {
		t.Errorf("with jobscope in /usr/local/bin only, the report came from %q", got)
	}
	// BIN= still names any other binary.
	site := filepath.Join(filepath.Dir(h.work), "site")
	os.Mkdir(site, 0o755)
	h.standIn(site, "site")
	other := filepath.Join(site, "jobscope")
	os.WriteFile(h.conf, []byte("ENABLE=yes\nBIN="+other+"\n"), 0o644)
	h.run("53")
	if got := h.report("jobscope-53.txt"); !strings.HasPrefix(got, "site\nreport\n") {
		t.Errorf("BIN=%s: the report came from %q", other, got)
	}
}

// TestReportEpilogConfComments: values followed by a " # comment", as
// docs/report.md and the packaged report-epilog.conf write them, keep
// their value (TIMEOUT=30 # ... used to turn the report off).
func TestReportEpilogConfComments(t *testing.T) {
	h := newEpilogHost(t)
	h.standIn(h.usrBin, "usr-bin")
	os.WriteFile(h.conf, []byte("# a comment line\nENABLE=yes   # on\nFORMAT=html  # or text\n"+
		"NAME=r-%j.html\t# tab before the comment\nTIMEOUT=30   # seconds\n"), 0o644)
	h.run("54")
	got := h.report("r-54.html")
	for _, want := range []string{"usr-bin\nreport\n", "--format=html", "\n54\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("report call %q lacks %q", got, want)
		}
	}
}
