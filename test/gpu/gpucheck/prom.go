// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// scrape is one /metrics reading of one jobscope instance.
type scrape struct {
	At       time.Time
	Took     time.Duration
	Families map[string]*dto.MetricFamily
}

var client = &http.Client{Timeout: 15 * time.Second}

func getMetrics(addr string) (*scrape, error) {
	t0 := time.Now()
	resp, err := client.Get("http://" + addr + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: HTTP %d", addr, resp.StatusCode)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, err
	}
	return &scrape{At: t0, Took: time.Since(t0), Families: fams}, nil
}

// value finds the first series of name whose labels include want.
func (s *scrape) value(name string, want map[string]string) (float64, bool) {
	if s == nil {
		return 0, false
	}
	f := s.Families[name]
	if f == nil {
		return 0, false
	}
	for _, m := range f.Metric {
		if !matches(m, want) {
			continue
		}
		switch {
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		case m.Counter != nil:
			return m.Counter.GetValue(), true
		case m.Untyped != nil:
			return m.Untyped.GetValue(), true
		}
	}
	return 0, false
}

// label returns label key of the first series of name matching want.
func (s *scrape) label(name string, want map[string]string, key string) string {
	if s == nil || s.Families[name] == nil {
		return ""
	}
	for _, m := range s.Families[name].Metric {
		if matches(m, want) {
			for _, l := range m.Label {
				if l.GetName() == key {
					return l.GetValue()
				}
			}
		}
	}
	return ""
}

// series lists the series of name as "labels=value" strings, for the log.
func (s *scrape) series(prefix string) []string {
	var out []string
	for name, f := range s.Families {
		if !strings.HasPrefix(name, prefix) {
			continue
		}
		for _, m := range f.Metric {
			var ls []string
			for _, l := range m.Label {
				ls = append(ls, l.GetName()+"="+l.GetValue())
			}
			v, _ := (&scrape{Families: map[string]*dto.MetricFamily{name: {Metric: []*dto.Metric{m}}}}).value(name, nil)
			out = append(out, fmt.Sprintf("%s{%s} %g", name, strings.Join(ls, ","), v))
		}
	}
	sort.Strings(out)
	return out
}

func matches(m *dto.Metric, want map[string]string) bool {
	for k, v := range want {
		found := false
		for _, l := range m.Label {
			if l.GetName() == k && l.GetValue() == v {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return -1
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
