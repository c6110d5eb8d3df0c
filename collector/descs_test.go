// SPDX-License-Identifier: Apache-2.0

package collector

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/jobscope/jobscope/discovery"
)

// A descriptor keeps the label names it was built with; nothing reads
// them back from prometheus.Desc's text.
func TestDescLabels(t *testing.T) {
	d := NewJobDesc("slurm_job_test_total", "Test.", "type")
	if got := strings.Join(d.Labels, ","); got != "jobid,user,account,type" {
		t.Errorf("labels %s", got)
	}
	if got := strings.Join(d.Extra(), ","); got != "type" {
		t.Errorf("extra %s", got)
	}
	for _, bad := range [][]string{{"a", "a"}, {"not valid"}, {"9x"}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("labels %q accepted", bad)
				}
			}()
			NewDesc("jobscope_test", "Test.", bad...)
		}()
	}
}

// A wrong number of label values is an invalid series, not a panic; it
// fails that series only.
func TestWrongLabelCount(t *testing.T) {
	d := NewJobDesc("slurm_job_test_total", "Test.", "type")
	js := NewPairCache().Job(&discovery.Job{ID: "1", Meta: discovery.Meta{User: "u", Account: "a"}})
	for _, m := range []prometheus.Metric{
		js.Counter(d, 1), js.Counter(d, 1, "a", "b"), d.Counter(1, "1"),
		js.Counter(NewDesc("jobscope_test", "Test."), 1),
	} {
		if err := m.Write(nil); err == nil {
			t.Errorf("%v: a mislabelled series was accepted", m.Desc())
		}
	}
}

// Label values from Slurm metadata or executable paths are bytes; the
// series carries valid UTF-8.
func TestInvalidUTF8Label(t *testing.T) {
	d := NewJobDesc("slurm_job_test_total", "Test.", "exe")
	reg := prometheus.NewPedanticRegistry()
	js := NewPairCache().Job(&discovery.Job{ID: "1", Meta: discovery.Meta{User: "u\xff", Account: "a"}})
	reg.MustRegister(metrics{js.Counter(d, 1, "/bin/\xfe"), NewDesc("jobscope_test", "Test.", "x").Gauge(1, "\xff")})
	if _, err := reg.Gather(); err != nil {
		t.Fatal(err)
	}
}

type metrics []prometheus.Metric

func (m metrics) Describe(chan<- *prometheus.Desc) {}
func (m metrics) Collect(ch chan<- prometheus.Metric) {
	for _, x := range m {
		ch <- x
	}
}
