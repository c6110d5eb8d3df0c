// SPDX-License-Identifier: Apache-2.0

package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// The daemon runs with capabilities on every compute node: it must link
// none of the report's code, nor what only the report's charts need
// (plotting, fonts, LaTeX, PDF, SVG, image codecs). `jobscope report`
// runs the separate jobscope-report binary instead.
// Each entry is a package path and everything under it; the old homes of
// the same modules (github.com/go-fonts, go-latex, go-pdf) are listed too.
var reportOnly = []string{
	"github.com/jobscope/jobscope/cmd/jobscope-report",
	"gonum.org", "codeberg.org/go-fonts", "codeberg.org/go-latex", "codeberg.org/go-pdf",
	"github.com/go-fonts", "github.com/go-latex", "github.com/go-pdf", "github.com/ajstarks/svgo",
	"github.com/golang/freetype", "golang.org/x/image", "git.sr.ht/~sbinet/gg",
}

// forbiddenDeps lists the packages of deps (go list -deps output) that
// only the report may link.
func forbiddenDeps(deps string) []string {
	var bad []string
	for _, pkg := range strings.Fields(deps) {
		for _, p := range reportOnly {
			if pkg == p || strings.HasPrefix(pkg, p+"/") {
				bad = append(bad, pkg)
				break
			}
		}
	}
	return bad
}

// Both builds the packages ship (cgo with GPU support, static without)
// leave the report out of the daemon's dependency closure.
func TestDaemonLinksNoReport(t *testing.T) {
	for _, b := range []struct{ name, cgo, tags string }{{"cgo", "1", ""}, {"static", "0", "nogpu"}} {
		cmd := exec.Command("go", "list", "-deps", "-tags", b.tags, ".")
		cmd.Env = append(os.Environ(), "CGO_ENABLED="+b.cgo)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%s: go list: %v", b.name, err)
		}
		if !strings.Contains(string(out), "github.com/prometheus/client_golang/prometheus\n") {
			t.Fatalf("%s: go list output not understood:\n%s", b.name, out)
		}
		if bad := forbiddenDeps(string(out)); len(bad) > 0 {
			t.Errorf("%s build of cmd/jobscope links report-only packages: %s", b.name, strings.Join(bad, " "))
		}
	}
}

// The check catches the report and each kind of chart module (it cannot
// pass vacuously).
func TestForbiddenDeps(t *testing.T) {
	deps := "fmt\ngithub.com/jobscope/jobscope/cmd/jobscope-report/report\ngonum.org/v1/plot/vg\n" +
		"codeberg.org/go-pdf/fpdf\ngolang.org/x/image/font\ngithub.com/golang/freetype/truetype\n" +
		"github.com/spf13/pflag\ngithub.com/jobscope/jobscope/collector\ngonum.orgx\n"
	got := strings.Join(forbiddenDeps(deps), " ")
	want := "github.com/jobscope/jobscope/cmd/jobscope-report/report gonum.org/v1/plot/vg codeberg.org/go-pdf/fpdf " +
		"golang.org/x/image/font github.com/golang/freetype/truetype"
	if got != want {
		t.Errorf("got %s\nwant %s", got, want)
	}
}
