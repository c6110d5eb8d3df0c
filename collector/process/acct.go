// SPDX-License-Identifier: Apache-2.0

package process

import "sort"

// Cross-scrape accounting that keeps the per-job counters monotonic while
// processes and threads come and go. procfs only shows live tasks, so each
// task's last-seen counters are kept and, once the task is gone, folded
// into a per-job (and per-executable) sum. What a task did between the last
// scrape that saw it and its exit is not counted: that is the one place the
// counters fall short of the truth (they never go down).

// procMaxExesPerJob bounds the executables remembered per job; further ones
// are summed in an unnamed bucket that only ever counts as "other".
const procMaxExesPerJob = 512

// procOtherExe is the label value for the executables outside a job's top N.
const procOtherExe = "other"

// procUnknownExe labels processes whose executable could not be read (zombies
// first seen as zombies, permission denied).
const procUnknownExe = "unknown"

type procTrack struct {
	exe  string
	last uint64 // highest utime+stime seen
	base uint64 // ticks already counted for earlier executables (exec)
	gen  uint64
	ppid int
	io   [procNIO]uint64 // highest seen
}

type procTaskTrack struct {
	last [procNCounters]uint64
	gen  uint64
}

// procExeAcct is one executable of one job. Its series counts total-offset:
// offset moves when it enters or leaves the top N, so neither its series
// nor "other" ever decreases.
type procExeAcct struct {
	gone   uint64 // ticks of exited processes
	live   uint64 // ticks of live processes, this scrape
	prev   uint64 // total at the previous scrape
	offset uint64
	member bool
}

func (e *procExeAcct) total() uint64 { return e.gone + e.live }

type procJobAcct struct {
	gen         uint64 // counts the job's updates: marks tracks seen in the latest
	procs       map[procKey]*procTrack
	tasks       map[procTaskKey]*procTaskTrack
	goneTasks   [procNCounters]uint64
	exes        map[string]*procExeAcct
	otherFrozen uint64 // ticks of executables while they were in "other" and later promoted
	members     int
	goneIO      [procNIO]uint64 // IO of exited processes that no job process reaped
	ioOut       [procNIO]uint64 // last IO emitted: the totals never go down
	livePIDs    map[int]bool    // this scrape's pids, reused across scrapes
}

func newProcJobAcct() *procJobAcct {
	return &procJobAcct{procs: map[procKey]*procTrack{}, tasks: map[procTaskKey]*procTaskTrack{},
		exes: map[string]*procExeAcct{}, livePIDs: map[int]bool{}}
}

func (a *procJobAcct) exe(name string) *procExeAcct {
	if e := a.exes[name]; e != nil {
		return e
	}
	if len(a.exes) >= procMaxExesPerJob {
		name = ""
		if e := a.exes[name]; e != nil {
			return e
		}
	}
	e := &procExeAcct{}
	a.exes[name] = e
	return e
}

// update folds one scrape's samples into the job's running sums.
func (a *procJobAcct) update(js *procJobSample, gen uint64, topN int) {
	for _, p := range js.procs {
		t := a.procs[p.key]
		if t == nil {
			exe := p.exe
			if exe == "" {
				exe = procUnknownExe
			}
			t = &procTrack{exe: exe}
			a.procs[p.key] = t
		} else if p.exe != "" && p.exe != t.exe {
			// exec: what ran so far stays with the old executable.
			a.exe(t.exe).gone += t.last - t.base
			t.base, t.exe = t.last, p.exe
		}
		t.last = max(t.last, p.ticks)
		t.gen, t.ppid = gen, p.ppid
		if p.hasIO {
			for i, v := range p.io {
				t.io[i] = max(t.io[i], v)
			}
		}
	}
	clear(a.livePIDs)
	for _, p := range js.procs {
		a.livePIDs[p.key.pid] = true
	}
	for k, t := range a.procs {
		if t.gen != gen {
			a.exe(t.exe).gone += t.last - t.base
			// A parent in the job takes the child's IO into its own
			// /proc/<pid>/io when it reaps it: count it there, not twice.
			if !a.livePIDs[t.ppid] {
				for i, v := range t.io {
					a.goneIO[i] += v
				}
			}
			delete(a.procs, k)
		}
	}
	for _, e := range a.exes {
		e.live = 0
	}
	for _, t := range a.procs {
		a.exe(t.exe).live += t.last - t.base
	}

	for _, ts := range js.tasks {
		t := a.tasks[ts.key]
		if t == nil {
			t = &procTaskTrack{}
			a.tasks[ts.key] = t
		}
		for i, v := range ts.ctrs {
			t.last[i] = max(t.last[i], v)
		}
		t.gen = gen
	}
	for k, t := range a.tasks {
		if t.gen != gen {
			for i, v := range t.last {
				a.goneTasks[i] += v
			}
			delete(a.tasks, k)
		}
	}
	a.rank(topN)
}

// taskTotals are the job's counters: exited tasks plus live ones.
func (a *procJobAcct) taskTotals() [procNCounters]uint64 {
	out := a.goneTasks
	for _, t := range a.tasks {
		for i, v := range t.last {
			out[i] += v
		}
	}
	return out
}

// ioTotals are the job's IO counters: exited processes no job process
// reaped, plus live ones (which include the children they reaped). Between
// a child's exit and its reaping the sum dips; the emitted value holds.
func (a *procJobAcct) ioTotals() [procNIO]uint64 {
	sum := a.goneIO
	for _, t := range a.procs {
		for i, v := range t.io {
			sum[i] += v
		}
	}
	for i, v := range sum {
		a.ioOut[i] = max(a.ioOut[i], v)
	}
	return a.ioOut
}

// rank keeps the top N executables by total CPU as their own series. A
// challenger must beat the weakest member by a margin, so two executables
// of similar weight do not swap places every scrape.
func (a *procJobAcct) rank(topN int) {
	var cands []string
	for name, e := range a.exes {
		if !e.member && name != "" && e.total() > 0 {
			cands = append(cands, name)
		}
	}
	sort.Slice(cands, func(i, j int) bool {
		ti, tj := a.exes[cands[i]].total(), a.exes[cands[j]].total()
		if ti != tj {
			return ti > tj
		}
		return cands[i] < cands[j]
	})
	for _, c := range cands {
		ce := a.exes[c]
		if a.members >= topN {
			we := a.weakest()
			if we == nil || ce.total() <= we.total()+procTopMargin(we.total()) {
				break
			}
			// The evicted series stops; its later growth counts in "other".
			we.member, we.offset = false, we.prev
			a.members--
		}
		// What the challenger did up to the last scrape was reported in
		// "other" and stays there; its own series starts from there.
		a.otherFrozen += ce.prev - ce.offset
		ce.offset, ce.member = ce.prev, true
		a.members++
	}
}

func (a *procJobAcct) weakest() *procExeAcct {
	var wn string
	var we *procExeAcct
	for name, e := range a.exes {
		if !e.member {
			continue
		}
		if we == nil || e.total() < we.total() || (e.total() == we.total() && name > wn) {
			wn, we = name, e
		}
	}
	return we
}

// procTopMargin is what a challenger must add to the weakest member's total:
// 10%, at least one second (100 ticks).
func procTopMargin(t uint64) uint64 { return max(t/10, 100) }

// procExeValue is a member's or "other"'s value, in ticks.
type procExeValue struct {
	exe   string
	ticks uint64
}

// cpuSeries returns the members' values (sorted by name) and "other", then
// remembers this scrape's totals for the next promotion or eviction.
func (a *procJobAcct) cpuSeries(out []procExeValue) []procExeValue {
	other := a.otherFrozen
	for name, e := range a.exes {
		if e.member {
			out = append(out, procExeValue{exe: name, ticks: e.total() - e.offset})
		} else {
			other += e.total() - e.offset
		}
		e.prev = e.total()
	}
	sort.Slice(out, func(i, j int) bool { return out[i].exe < out[j].exe })
	return append(out, procExeValue{exe: procOtherExe, ticks: other})
}
