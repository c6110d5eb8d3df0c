// SPDX-License-Identifier: Apache-2.0

package cgroup

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/jobscope/jobscope/cgroupfs"
	"github.com/jobscope/jobscope/collector"
	"github.com/jobscope/jobscope/collector/provide/jobcgroup"
	"github.com/jobscope/jobscope/discovery"
)

// jobReader reads one job's cgroup files during one scrape.
type jobReader struct {
	*cgroupfs.Files
	r       *cgroupfs.Reader // for the files read outside Files (v1 events)
	s       *collector.Scrape
	out     collector.Out // drops what --metrics.level leaves out
	d       *cgroupDescs
	job     *discovery.Job
	usageP  *jobcgroup.Provider
	devices *deviceNames
	series  *collector.JobSeries
	state   *collector.Entry[jobState]
	now     func() time.Time
}

func (jr *jobReader) read(dir, name string) []byte { return jr.Read(dir, name) }

func (jr *jobReader) malformed(dir, name string, err error) { jr.Malformed(dir, name, err) }

func (jr *jobReader) emit(desc *collector.Desc, t prometheus.ValueType, v float64, extra ...string) {
	jr.out.Job(jr.series, desc, t, v, extra...)
}

// uintFile emits a file holding one number, divided by div (to base units).
// A file whose series the level leaves out is not read.
func (jr *jobReader) uintFile(dir, name string, desc *collector.Desc, t prometheus.ValueType, div float64, extra ...string) {
	if !jr.out.Emits(desc) {
		return
	}
	if v, ok := jr.Uint(dir, name); ok {
		jr.emit(desc, t, float64(v)/div, extra...)
	}
}

// usage emits the scrape's shared reading of the job's CPU, memory and
// cores (read once for every collector), and reports its bad files here,
// where the series they would have given are missing.
func (jr *jobReader) usage() *jobcgroup.Usage {
	u := jr.usageP.UsageFrom(jr.s, jr.job, jr.Files)
	for _, p := range u.Problems {
		jr.s.Problem(p.Cause, p.Err)
	}
	if u.Gone {
		jr.Gone = true
		return u
	}
	for _, f := range [...]struct {
		has  jobcgroup.UsageFields
		desc *collector.Desc
		v    float64
		mode string
	}{
		{jobcgroup.HasMemory, jr.d.memUsage, u.Memory, ""},
		{jobcgroup.HasCPU, jr.d.cpuUsage, u.CPU, ""},
		{jobcgroup.HasUser, jr.d.cpuMode, u.User, "user"},
		{jobcgroup.HasSystem, jr.d.cpuMode, u.System, "system"},
		{jobcgroup.HasPeriods, jr.d.cpuPeriods, u.Periods, ""},
		{jobcgroup.HasThrottled, jr.d.cpuThrottled, u.Throttled, ""},
		{jobcgroup.HasThrottledTime, jr.d.cpuThrottledTime, u.ThrottledTime, ""},
		{jobcgroup.HasCPUs, jr.d.cpus, float64(len(u.CPUs)), ""},
	} {
		switch {
		case u.Has&f.has == 0:
		case f.mode != "":
			jr.emit(f.desc, prometheus.CounterValue, f.v, f.mode)
		case f.desc == jr.d.memUsage || f.desc == jr.d.cpus:
			jr.emit(f.desc, prometheus.GaugeValue, f.v)
		default:
			jr.emit(f.desc, prometheus.CounterValue, f.v)
		}
	}
	return u
}

// limitFile emits a limit unless it is unlimited; it returns the value. A
// limit whose series the level leaves out is not read.
func (jr *jobReader) limitFile(dir, name string, desc *collector.Desc) (uint64, bool) {
	if desc != nil && !jr.out.Emits(desc) {
		return 0, false
	}
	b := jr.readStatic(dir, name)
	if b == nil {
		return 0, false
	}
	v, err := cgroupfs.ParseLimit(b)
	if err != nil {
		jr.malformed(dir, name, err)
		return 0, false
	}
	if v != cgroupfs.Unlimited && desc != nil {
		jr.emit(desc, prometheus.GaugeValue, float64(v))
	}
	return v, true
}

// flatKey is what one key of a flat-keyed file becomes: a series of desc
// (with label as its extra label value, if set), its value divided by div.
// The descriptor says at which --metrics.level the series is emitted.
type flatKey struct {
	key   string
	desc  func(d *cgroupDescs) *collector.Desc
	label string
	typ   prometheus.ValueType
	div   float64
}

// flatTable is the exported keys of one flat-keyed file, indexed by raw key.
type flatTable struct {
	index map[string]int
	keys  []flatKey
}

func newFlatTable(keys ...flatKey) *flatTable {
	if len(keys) > 64 {
		panic("flatTable: more keys than the de-dup mask holds")
	}
	t := &flatTable{index: make(map[string]int, len(keys)), keys: keys}
	for i, k := range keys {
		if _, dup := t.index[k.key]; dup {
			panic("flatTable: repeated key " + k.key)
		}
		t.index[k.key] = i
	}
	return t
}

// flat parses a flat-keyed file and emits the keys of t. A malformed line
// is reported, the good lines still count. A key repeated in the file
// (garbage, or a broken filesystem) gives its first value only: de-dup is
// on the raw key, so two lines can never become two series of one name.
func (jr *jobReader) flat(dir, name string, t *flatTable) bool {
	b := jr.read(dir, name)
	if b == nil {
		return false
	}
	var seen uint64
	err := cgroupfs.ParseFlatKeyed(b, func(k []byte, v uint64) {
		i, ok := t.index[string(k)]
		if !ok || seen&(1<<i) != 0 {
			return
		}
		seen |= 1 << i
		fk := &t.keys[i]
		if fk.label != "" {
			jr.emit(fk.desc(jr.d), fk.typ, float64(v)/fk.div, fk.label)
		} else {
			jr.emit(fk.desc(jr.d), fk.typ, float64(v)/fk.div)
		}
	})
	if err != nil {
		jr.malformed(dir, name, err)
	}
	return true
}

func (jr *jobReader) pressure(dir string) {
	for _, res := range [...]string{"cpu", "memory", "io"} {
		name := res + ".pressure"
		b := jr.read(dir, name)
		if b == nil {
			continue
		}
		p, err := cgroupfs.ParsePSI(b)
		if err != nil {
			jr.malformed(dir, name, err)
			continue
		}
		jr.emit(jr.d.pressure, prometheus.CounterValue, float64(p.Some)/1e6, res, "some")
		if p.HasFull {
			jr.emit(jr.d.pressure, prometheus.CounterValue, float64(p.Full)/1e6, res, "full")
		}
	}
}
