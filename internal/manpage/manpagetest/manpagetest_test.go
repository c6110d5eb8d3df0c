// SPDX-License-Identifier: Apache-2.0

package manpagetest

import (
	"fmt"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/jobscope/jobscope/internal/manpage"
)

// recorder is a testing.TB that keeps what the checks report.
type recorder struct {
	testing.TB
	errs []string
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, a ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, a...))
}

func flags() *pflag.FlagSet {
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	fs.String("shown", "", "Shown.")
	fs.Bool("also", false, "Also shown.")
	fs.String("hidden", "", "Hidden.")
	_ = fs.MarkHidden("hidden")
	return fs
}

// The checks pass a page written from the flag set, and fail one that
// misses a flag, repeats one, shows a hidden one or has too few.
func TestFlags(t *testing.T) {
	var good strings.Builder
	manpage.WriteFlags(&good, flags())
	for _, c := range []struct {
		name, page string
		min        int
		errs       int
	}{
		{"written", good.String(), 2, 0},
		{"too few expected", good.String(), 3, 1},
		{"missing", ".TH T 1\n", 0, 3},
		{"repeated", good.String() + manpage.Entry("shown") + "\nAgain.\n", 2, 2},
		{"hidden shown", good.String() + manpage.Entry("hidden") + "\nHidden.\n", 2, 2},
	} {
		r := &recorder{TB: t}
		Flags(r, c.page, flags(), c.min)
		if len(r.errs) != c.errs {
			t.Errorf("%s: %d errors, want %d: %q", c.name, len(r.errs), c.errs, r.errs)
		}
	}
	r := &recorder{TB: t}
	Has(r, good.String(), "Also shown.", "absent")
	if len(r.errs) != 1 || !strings.Contains(r.errs[0], "absent") {
		t.Errorf("Has: %q", r.errs)
	}
}
