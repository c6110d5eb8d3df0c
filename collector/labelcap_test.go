// SPDX-License-Identifier: Apache-2.0

package collector

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/jobscope/jobscope/discovery"
	"github.com/jobscope/jobscope/internal/testutil"
)

// labelNode is an exporter over 32 jobs of 60 series each (job labels,
// an extra label, and slurm_job_info with the job name), the shape of a
// node's answer; long sets job 7's user and name to 128 KiB.
func labelNode(long bool, logs *bytes.Buffer) *Exporter {
	huge := strings.Repeat("é", 64<<10) // 128 KiB, two bytes a rune: the cut must not split one
	var jobs []*discovery.Job
	for i := range 32 {
		j := &discovery.Job{ID: fmt.Sprint(1000 + i), Meta: discovery.Meta{User: "alice", Account: "physics", Name: "train"}}
		if long && i == 7 {
			j.Meta.User, j.Meta.Name = huge, "a"+huge
		}
		jobs = append(jobs, j)
	}
	per := NewJobDesc("slurm_job_test_bytes", "Test.", "type")
	info := NewDesc("slurm_job_test_info", "Test.", "jobid", "name")
	return NewExporter(map[string]Collector{"labels": funcCollector(func(s *Scrape, ch chan<- prometheus.Metric) error {
		for _, j := range s.Jobs() {
			js := s.Series(j)
			for k := range 59 {
				ch <- js.Gauge(per, float64(k), fmt.Sprint("t", k))
			}
			ch <- info.Gauge(1, j.ID, j.Meta.Name)
		}
		return nil
	})}, Options{Jobs: func(context.Context, discovery.Problem) []*discovery.Job { return jobs },
		Logger: slog.New(slog.NewTextHandler(logs, nil))})
}

func expose(t *testing.T, exp *Exporter) string {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(exp.Bind(t.Context()))
	return string(testutil.Exposition(t, reg))
}

// A job whose user and name are 128 KiB leaves the node's answer within
// 1.1 times the same node's without it: every value is cut to
// LabelValueMax, counted by label name and logged once.
func TestLongLabelValuesCut(t *testing.T) {
	var logs bytes.Buffer
	plain := expose(t, labelNode(false, &logs))
	exp := labelNode(true, &logs)
	expose(t, exp)
	out := expose(t, exp) // a second collection: counted again, not logged again
	t.Logf("answer: %d bytes, %d without the long labels", len(out), len(plain))
	if float64(len(out)) > 1.1*float64(len(plain)) {
		t.Errorf("answer %d bytes, %d without the long labels: over 1.1x", len(out), len(plain))
	}
	for _, want := range []string{`jobscope_label_values_cut_total{label="name"} 2`, `jobscope_label_values_cut_total{label="user"} 118`} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %s", want)
		}
	}
	for _, line := range strings.Split(out, "\n") {
		if len(line) > 2*LabelValueMax+200 {
			t.Errorf("series of %d bytes: %.200s", len(line), line)
		}
	}
	if n := strings.Count(logs.String(), "label values cut"); n != 2 {
		t.Errorf("%d log lines about cut values, want one per label name:\n%s", n, logs.String())
	}
}

// A cut value fits, is valid UTF-8, and two long values with one prefix
// stay two values (two series, not a duplicate).
func TestCutLabelValue(t *testing.T) {
	if v := CutLabelValue("short"); v != "short" {
		t.Errorf("short value changed: %q", v)
	}
	prefix := strings.Repeat("/deep", 100) + "€"
	a, b := CutLabelValue(prefix+"/a.out"), CutLabelValue(prefix+"/b.out")
	for _, v := range []string{a, b} {
		if len(v) > LabelValueMax || !utf8.ValidString(v) || !strings.Contains(v, cutMark) {
			t.Errorf("cut value %q: %d bytes, valid UTF-8 %v", v, len(v), utf8.ValidString(v))
		}
	}
	if a == b {
		t.Error("two long values with one prefix cut to one value")
	}
	for n := LabelValueMax - 30; n < LabelValueMax+10; n++ { // every cut position against a 3-byte rune
		v := CutLabelValue(strings.Repeat("x", n%3) + strings.Repeat("€", LabelValueMax))
		if !utf8.ValidString(v) || len(v) > LabelValueMax {
			t.Fatalf("cut at %d: %d bytes, valid UTF-8 %v", n, len(v), utf8.ValidString(v))
		}
	}
}
