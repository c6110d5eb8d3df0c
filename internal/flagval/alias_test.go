// SPDX-License-Identifier: Apache-2.0

package flagval

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

// TestAlias: an old name sets the new flag, through its checks, marks it
// given, and says once per use that it is deprecated; help leaves it out.
func TestAlias(t *testing.T) {
	newSet := func() (*pflag.FlagSet, *time.Duration, *bool, *bytes.Buffer) {
		fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
		var out bytes.Buffer
		fs.SetOutput(&out)
		d, b := new(time.Duration), new(bool)
		Duration(fs, d, "collector.x.interval", time.Minute, 1, "")
		fs.BoolVar(b, "collector.x.on", true, "")
		Alias(fs, "x.interval", "collector.x.interval")
		Alias(fs, "x.on", "collector.x.on")
		return fs, d, b, &out
	}
	fs, d, b, out := newSet()
	if err := fs.Parse([]string{"--x.interval=5s", "--x.on=false"}); err != nil {
		t.Fatal(err)
	}
	if *d != 5*time.Second || *b {
		t.Errorf("values through the old names: %v, %v", *d, *b)
	}
	if !fs.Changed("collector.x.interval") || !fs.Changed("collector.x.on") {
		t.Error("the new names do not count as given")
	}
	if got := strings.Count(out.String(), "\n"); got != 2 ||
		!strings.Contains(out.String(), "--x.interval has been deprecated, use --collector.x.interval instead") {
		t.Errorf("deprecation lines: %q", out.String())
	}
	if !fs.Lookup("x.on").Hidden || fs.Lookup("x.on").Annotations[AliasAnnotation][0] != "collector.x.on" {
		t.Error("the old name is shown in help, or does not say what it stands for")
	}

	fs, _, b, _ = newSet()
	*b = false
	if err := fs.Parse([]string{"--x.on"}); err != nil || !*b {
		t.Errorf("--x.on alone: %v, %v", err, *b)
	}
	fs, _, _, _ = newSet()
	if err := fs.Parse([]string{"--x.interval=-1s"}); err == nil {
		t.Error("the old name skips the new one's check")
	}
	fs, _, _, out = newSet()
	if err := fs.Parse([]string{"--collector.x.interval=2s"}); err != nil || out.Len() != 0 {
		t.Errorf("the new name: %v, %q", err, out.String())
	}
}
