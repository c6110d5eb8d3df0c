// SPDX-License-Identifier: Apache-2.0

package slurm

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/jobscope/jobscope/collector/provide"
	"github.com/jobscope/jobscope/slurmcli"
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

// The slow sources run every --slurm.slow-poll-interval, never more often
// than --slurm.poll-interval, and always less than --slurm.max-age apart:
// a short maximum age set alone (as before the slow interval existed)
// halves the slow interval, and set against it is refused.
func TestSlowPollInterval(t *testing.T) {
	for _, tc := range []struct {
		args       []string
		jobs, slow time.Duration
		err        string
	}{
		{nil, 30 * time.Second, 5 * time.Minute, ""},
		{[]string{"--slurm.slow-poll-interval=1m"}, 30 * time.Second, time.Minute, ""},
		{[]string{"--slurm.poll-interval=10m", "--slurm.max-age=0"}, 10 * time.Minute, 10 * time.Minute, ""},
		{[]string{"--slurm.max-age=2m"}, 30 * time.Second, time.Minute, ""},
		{[]string{"--slurm.max-age=2m", "--slurm.slow-poll-interval=3m"}, 0, 0, "must be less than --slurm.max-age"},
	} {
		fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
		p := New()
		p.Flags(fs)
		if err := fs.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		err := p.Start(&provide.Env{})
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%v: err %v, want %q", tc.args, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		c := p.Cache()
		if got := c.Interval(slurmcli.SourceJobs); got != tc.jobs {
			t.Errorf("%v: jobs every %s, want %s", tc.args, got, tc.jobs)
		}
		for _, src := range slurmcli.SlowSources {
			if got := c.Interval(src); got != tc.slow {
				t.Errorf("%v: %s every %s, want %s", tc.args, src, got, tc.slow)
			}
		}
		_ = p.Close()
	}
}

// --slurm.source=slurmrestd reads jobs from slurmrestd; the default runs
// squeue.
func TestSourceFlag(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/slurm/v0.0.44/ping":
			_, _ = w.Write([]byte(`{"pings":[],"errors":[]}`))
		case "/slurm/v0.0.44/jobs":
			_, _ = w.Write([]byte(`{"jobs":[{"job_id":7,"job_state":["RUNNING"]}],"errors":[]}`))
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	empty := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string // the job id, or what the error says
	}{
		{[]string{"--slurm.bin-dir=" + empty}, "squeue"},
		{[]string{"--slurm.bin-dir=" + empty, "--slurm.source=slurmrestd", "--slurm.restd.url=" + srv.URL}, "7"},
	} {
		fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
		p := New()
		p.Flags(fs)
		if err := fs.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		if err := p.Start(&provide.Env{}); err != nil {
			t.Fatal(err)
		}
		r := p.Cache().Jobs.Get(context.Background())
		switch {
		case tc.want == "squeue" && (r.Err == nil || !strings.Contains(r.Err.Error(), "squeue")):
			t.Errorf("%v: err %v, want squeue's", tc.args, r.Err)
		case tc.want != "squeue" && (r.Err != nil || len(r.Value) != 1 || r.Value[0].ID != tc.want):
			t.Errorf("%v: jobs %+v, err %v; want job %s", tc.args, r.Value, r.Err, tc.want)
		}
		_ = p.Close()
	}
}
