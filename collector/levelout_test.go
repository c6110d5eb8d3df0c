// SPDX-License-Identifier: Apache-2.0

package collector

import (
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/jobscope/jobscope/discovery"
)

// TestOutFiltersByDescriptor: what a level sends is what the descriptors
// declare (Full, Partly with BasicOnly), with no level test in a collector.
func TestOutFiltersByDescriptor(t *testing.T) {
	whole := NewJobDesc("t_whole", "h", "mode")
	full := NewJobDesc("t_full", "h", "mode").Full()
	some := NewJobDesc("t_some", "h", "resource", "level").Partly(`level="some"`, "some and full").BasicOnly("level", "some")
	summed := NewJobDesc("t_summed", "h", "device").Partly(`device="all"`, "per device")
	node := NewDesc("t_node", "h", "level").Partly("x", "y").BasicOnly("level", "some")
	names := map[*prometheus.Desc]string{}
	for _, d := range []*Desc{whole, full, some, summed} {
		names[d.Prom()] = d.Name
	}
	js := NewPairCache().Job(&discovery.Job{ID: "1"})
	send := func(level Level) []string {
		ch := make(chan prometheus.Metric, 16)
		o := NewOut(ch, level)
		o.Counter(js, whole, 1, "user")
		o.Counter(js, full, 1, "user")
		o.Counter(js, some, 1, "cpu", "some")
		o.Counter(js, some, 1, "cpu", "full")
		o.Counter(js, summed, 1, "sda")
		if o.Keeps(node, "full") != (level == LevelFull) || !o.Keeps(node, "some") {
			t.Errorf("%v: Keeps of a descriptor without job labels", level)
		}
		close(ch)
		var got []string
		for m := range ch {
			var pb dto.Metric
			if err := m.Write(&pb); err != nil {
				t.Fatal(err)
			}
			var lv []string
			for _, l := range pb.Label {
				if !slices.Contains(discovery.JobLabelNames, l.GetName()) {
					lv = append(lv, l.GetValue())
				}
			}
			got = append(got, names[m.Desc()]+" "+strings.Join(lv, ","))
		}
		return got
	}
	basic := send(LevelBasic)
	if want := []string{"t_whole user", "t_some some,cpu", "t_summed sda"}; !slices.Equal(basic, want) {
		t.Errorf("basic sent %q, want %q", basic, want)
	}
	if got := send(LevelFull); len(got) != 5 {
		t.Errorf("full sent %q, want all 5", got)
	}
	b, f := NewOut(nil, LevelBasic), NewOut(nil, LevelFull)
	if b.Emits(full) || !f.Emits(full) || !b.Emits(some) {
		t.Error("Emits does not follow Full")
	}
	if b.Whole(summed) || !f.Whole(summed) || !b.Whole(whole) {
		t.Error("Whole does not follow Partly")
	}
}
