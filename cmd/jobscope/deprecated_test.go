// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/jobscope/jobscope/internal/flagval"
)

// TestDeprecatedFlagNames: a flag renamed into --collector.<name>.* keeps
// its old name for one release. The old name still sets the value, says in
// one line that it is deprecated, and CHANGELOG.md lists the rename.
func TestDeprecatedFlagNames(t *testing.T) {
	code, stderr := runBinary(t, "--power.ipmi=off", "--version")
	if code != 0 || strings.Count(stderr, "\n") != 1 ||
		!strings.Contains(stderr, "--power.ipmi has been deprecated, use --collector.power.ipmi instead") {
		t.Errorf("--power.ipmi=off --version: exit %d, stderr %q; want 0 and one deprecation line", code, stderr)
	}

	fs, _, _ := newFlagSet()
	var out bytes.Buffer
	fs.SetOutput(&out)
	if err := fs.Parse([]string{"--slurm.sacct.since=1h", "--power.rapl=false", "--slurm.pending-reasons.top=3"}); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"collector.slurm_sacct.since": "1h", "collector.power.rapl": "false",
		"collector.slurm_queue_wait.pending-reasons.top": "3"} {
		if f := fs.Lookup(name); f.Value.String() != want || !fs.Changed(name) {
			t.Errorf("--%s = %q (changed %v) after its old name, want %q", name, f.Value.String(), fs.Changed(name), want)
		}
	}
	if n := strings.Count(out.String(), "has been deprecated"); n != 3 {
		t.Errorf("%d deprecation lines, want 3:\n%s", n, out.String())
	}

	changelog, err := os.ReadFile("../../CHANGELOG.md")
	if err != nil {
		t.Fatal(err)
	}
	aliases := 0
	fs.VisitAll(func(f *pflag.Flag) {
		target := f.Annotations[flagval.AliasAnnotation]
		if f.Deprecated == "" || len(target) != 1 {
			return
		}
		aliases++
		if rename := "`--" + f.Name + "` → `--" + target[0] + "`"; !bytes.Contains(changelog, []byte(rename)) {
			t.Errorf("CHANGELOG.md does not list the rename %s", rename)
		}
	})
	if aliases < 20 {
		t.Errorf("%d deprecated names, want the 20 renamed in issue 26", aliases)
	}
}
