// SPDX-License-Identifier: Apache-2.0

package manpage

import (
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

func TestLineEscapes(t *testing.T) {
	for in, want := range map[string]string{
		`a-b\c`: `a\-b\ec`, ".x": `\&.x`, "'q": `\&'q`, "mid.dot": "mid.dot",
	} {
		if got := Line(in); got != want {
			t.Errorf("Line(%q) = %q, want %q", in, got, want)
		}
	}
}

// Hidden and deprecated flags stay out, as in --help; defaults that say
// nothing are left out, the others written once.
func TestWriteFlags(t *testing.T) {
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	fs.String("shown-flag", "x-y", "A `FILE` to read.")
	fs.Bool("quiet", false, ".starts with a dot")
	fs.String("hidden", "", "no")
	_ = fs.MarkHidden("hidden")
	fs.String("old", "", "no")
	_ = fs.MarkDeprecated("old", "gone")
	var b strings.Builder
	WriteFlags(&b, fs)
	want := ".TP\n\\fB\\-\\-quiet\\fR\n\\&.starts with a dot\n" +
		".TP\n\\fB\\-\\-shown\\-flag\\fR=\\fIFILE\\fR\nA FILE to read.\nDefault: \\fBx\\-y\\fR.\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
	if !strings.HasPrefix(b.String(), Entry("quiet")) {
		t.Errorf("Entry(quiet) = %q", Entry("quiet"))
	}
}
