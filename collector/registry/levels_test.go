// SPDX-License-Identifier: Apache-2.0

package registry

import (
	"slices"
	"strings"
	"testing"

	"github.com/jobscope/jobscope/collector"
	"github.com/jobscope/jobscope/discovery"
)

// TestDescriptorLevels: every collector descriptor carries the level that
// decides both docs/metrics.md and what collector.Out sends.
func TestDescriptorLevels(t *testing.T) {
	leveled := 0
	for _, f := range Factories() {
		if f.Descs == nil {
			continue
		}
		descs := f.Descs()
		for _, e := range levelErrors(descs) {
			t.Errorf("%s collector: %s", f.Name, e)
		}
		for _, d := range descs {
			if d.LevelDoc() != "basic" {
				leveled++
			}
		}
	}
	// cgroup, process and ebpf have full-only and partly families today.
	if leveled < 15 {
		t.Errorf("%d descriptors with a level above basic: the levels are not read", leveled)
	}
}

// levelErrors says which descriptors lack the level they need: one whose
// HELP speaks of a level but carries none (docs and series would differ
// from what it says), or a level on a series Out does not filter (only
// per-job series go through it).
func levelErrors(descs []*collector.Desc) []string {
	var errs []string
	for _, d := range descs {
		doc := d.LevelDoc()
		perJob := len(d.Labels) >= len(discovery.JobLabelNames) && slices.Equal(d.Labels[:len(discovery.JobLabelNames)], discovery.JobLabelNames)
		saysLevel := strings.Contains(d.Help, "--metrics.level") || strings.Contains(d.Help, "at full")
		switch {
		case doc != "basic" && doc != "full" && !strings.HasPrefix(doc, "basic: "):
			errs = append(errs, d.Name+": level "+doc)
		case saysLevel && doc == "basic":
			errs = append(errs, d.Name+": its HELP speaks of --metrics.level, it has no level (Full or Partly)")
		case doc != "basic" && !perJob:
			errs = append(errs, d.Name+": a level on a series that is not per job")
		}
	}
	return errs
}

func TestLevelCheckFails(t *testing.T) {
	got := levelErrors([]*collector.Desc{
		collector.NewJobDesc("a_bytes", "Per device at --metrics.level=full.", "device"),
		collector.NewDesc("b_bytes", "Node bytes.").Full(),
		collector.NewJobDesc("c_bytes", "Job bytes.").Full(),
	})
	if len(got) != 2 || !strings.HasPrefix(got[0], "a_bytes:") || !strings.HasPrefix(got[1], "b_bytes:") {
		t.Errorf("level errors %q, want a_bytes and b_bytes", got)
	}
}
