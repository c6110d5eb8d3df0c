// SPDX-License-Identifier: Apache-2.0

package collector

import (
	"context"
	"fmt"
	"testing"

	"github.com/jobscope/jobscope/discovery"
)

// Two overlapping scrapes, in every order of their steps (use the job's
// value, sweep at the end): the value is never dropped while the job is
// there, and each scrape's addition is applied exactly once.
func TestStateOverlappingScrapes(t *testing.T) {
	job := &discovery.Job{ID: "7", Meta: discovery.Meta{Key: "c/7/1"}}
	steps := func(name string) []string { return []string{name + ".use", name + ".sweep"} }
	var orders [][]string
	var walk func(a, b []string, acc []string)
	walk = func(a, b []string, acc []string) {
		if len(a) == 0 && len(b) == 0 {
			orders = append(orders, append([]string(nil), acc...))
			return
		}
		if len(a) > 0 {
			walk(a[1:], b, append(acc, a[0]))
		}
		if len(b) > 0 {
			walk(a, b[1:], append(acc, b[0]))
		}
	}
	walk(steps("A"), steps("B"), nil)
	if len(orders) != 6 {
		t.Fatalf("%d orders", len(orders))
	}
	for _, order := range orders {
		t.Run(fmt.Sprint(order), func(t *testing.T) {
			st := NewState(func() *int { return new(int) })
			serial := uint64(10)
			scrape := func() *Scrape {
				serial++
				return NewScrape(context.Background(), "test", ScrapeOptions{Serial: serial})
			}
			// Ten scrapes before: the job's counter is at 10.
			for range 10 {
				s := scrape()
				st.Job(s, job).Do(func(v *int) { *v++ })
				st.Sweep(s)
			}
			scrapes := map[string]*Scrape{}
			last := 10
			for _, ev := range order {
				name := ev[:1]
				if scrapes[name] == nil {
					scrapes[name] = scrape()
				}
				s := scrapes[name]
				if ev[2:] == "sweep" {
					st.Sweep(s)
					continue
				}
				st.Job(s, job).Do(func(v *int) {
					*v++
					if *v != last+1 {
						t.Errorf("%s: counter %d after %d", ev, *v, last)
					}
					last = *v
				})
			}
			st.Job(scrape(), job).Do(func(v *int) {
				if *v != 12 {
					t.Errorf("after both scrapes: %d, want 12", *v)
				}
			})
		})
	}
}

// A job unused for StateGrace scrapes is dropped; one that misses fewer
// keeps its value.
func TestStateGrace(t *testing.T) {
	st := NewState(func() *int { return new(int) })
	job := &discovery.Job{ID: "7"}
	s := func(n uint64) *Scrape { return NewScrape(context.Background(), "test", ScrapeOptions{Serial: n}) }
	st.Job(s(1), job).Do(func(v *int) { *v = 5 })
	for n := uint64(2); n <= StateGrace; n++ {
		st.Sweep(s(n))
	}
	if st.Len() != 1 {
		t.Fatalf("dropped after %d scrapes without it", StateGrace-1)
	}
	st.Job(s(StateGrace), job).Do(func(v *int) {
		if *v != 5 {
			t.Errorf("value %d after a short absence", *v)
		}
	})
	st.Sweep(s(2 * StateGrace))
	if st.Len() != 0 {
		t.Error("an ended job's value stays")
	}
}

// Metadata that arrives after a job was first seen (the background squeue
// fills Meta.Key in) keeps the job's value: a job is keyed by id and
// cgroup directory, not by its metadata.
func TestStateKeyIgnoresLateMetadata(t *testing.T) {
	st := NewState(func() *int { return new(int) })
	dir := "/sys/fs/cgroup/system.slice/slurmstepd.scope/job_7"
	j := &discovery.Job{ID: "7", Version: 2, Dir: dir}
	st.Job(NewScrape(context.Background(), "test", ScrapeOptions{Serial: 1}), j).Do(func(v *int) { *v = 42 })
	later := &discovery.Job{ID: "7", Version: 2, Dir: dir, Meta: discovery.Meta{Key: "cluster/7/1795000000", Account: "physics", Source: "squeue"}}
	st.Job(NewScrape(context.Background(), "test", ScrapeOptions{Serial: 2}), later).Do(func(v *int) {
		if *v != 42 {
			t.Errorf("value %d after the job's metadata arrived, want 42", *v)
		}
	})
	other := &discovery.Job{ID: "7", Version: 2, Dir: dir + "b"}
	st.Job(NewScrape(context.Background(), "test", ScrapeOptions{Serial: 3}), other).Do(func(v *int) {
		if *v != 0 {
			t.Error("another directory under the same id shares the old job's value")
		}
	})
}
