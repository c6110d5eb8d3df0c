// SPDX-License-Identifier: Apache-2.0

package slurm

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// The deprecated scontrol flags still work, each with one log line:
// =false turns the background squeue off, the timeout sets its timeout.
func TestDeprecatedScontrolFlags(t *testing.T) {
	for _, tc := range []struct {
		args     []string
		squeue   bool
		warnings int
	}{
		{nil, true, 0},
		{[]string{"--slurm.scontrol-fallback=false"}, false, 1},
		{[]string{"--slurm.scontrol-fallback=false", "--slurm.node-metadata.squeue=true"}, true, 1},
		{[]string{"--slurm.scontrol-timeout=3s"}, true, 1},
	} {
		fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
		p := New()
		p.Flags(fs)
		if err := fs.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		var logs strings.Builder
		q, err := p.NodeQueue(slog.New(slog.NewJSONHandler(&logs, nil)))
		if err != nil {
			t.Fatal(err)
		}
		if (q.Run != nil) != tc.squeue || strings.Count(logs.String(), "deprecated") != tc.warnings {
			t.Errorf("%v: squeue %v, log %q", tc.args, q.Run != nil, logs.String())
		}
		if len(tc.args) == 1 && tc.args[0] == "--slurm.scontrol-timeout=3s" && q.Timeout.Seconds() != 3 {
			t.Errorf("timeout %v", q.Timeout)
		}
	}
}
