package cgroup

import (
	"errors"
	"os"
	"path/filepath"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/jobscope/jobscope/cgroupfs"
	"github.com/jobscope/jobscope/collector"
	"github.com/jobscope/jobscope/collector/discovery"
)

// jobReader reads one job's cgroup files during one scrape.
type jobReader struct {
	r       *cgroupfs.Reader
	s       *collector.Scrape
	ch      chan<- prometheus.Metric
	d       *cgroupDescs
	job     *discovery.Job
	devices *deviceNames
	series  *collector.JobSeries
	state   *collector.Entry[jobState]
	now     func() time.Time
	gone    bool // the job's cgroup vanished: stop quietly
	dirs    []cgroupfs.Dir
}

// dir returns the open directory for path, opening it on first use; a job
// directory that cannot be opened because it is gone ends the job quietly.
func (jr *jobReader) dir(path string) (cgroupfs.Dir, bool) {
	for _, d := range jr.dirs {
		if d.Path() == path {
			return d, true
		}
	}
	d, err := jr.r.OpenDir(path)
	if err != nil {
		jr.fail(err, true)
		return d, false
	}
	jr.dirs = append(jr.dirs, d)
	return d, true
}

// close releases the job's open directories.
func (jr *jobReader) close() {
	for _, d := range jr.dirs {
		d.Close()
	}
	jr.dirs = jr.dirs[:0]
}

func (jr *jobReader) fail(err error, isDir bool) {
	switch {
	case cgroupfs.Gone(err):
		if isDir {
			jr.gone = true
		}
	case errors.Is(err, os.ErrPermission):
		jr.s.Problem("permission_denied", err)
	default:
		jr.s.Problem("read_failed", err)
	}
}

// read returns a file's content, or nil when it is absent (the kernel or
// the controller does not provide it), gone, or unreadable (reported).
func (jr *jobReader) read(dir, name string) []byte {
	if jr.gone || dir == "" {
		return nil
	}
	d, ok := jr.dir(dir)
	if !ok {
		return nil
	}
	b, err := jr.r.ReadIn(d, name)
	if err == nil {
		return b
	}
	if cgroupfs.Gone(err) {
		// An absent file is a kernel without it; a removed directory is a
		// job that ended mid-scrape. Both are silent.
		jr.gone = d.Removed()
		return nil
	}
	jr.fail(err, false)
	return nil
}

func (jr *jobReader) malformed(dir, name string, err error) {
	jr.s.Problem("malformed_file", &discovery.DirError{Path: filepath.Join(dir, name), Why: err.Error()})
}

func (jr *jobReader) emit(desc *collector.Desc, t prometheus.ValueType, v float64, extra ...string) {
	jr.ch <- jr.series.Metric(desc, t, v, extra...)
}

// uintFile emits a file holding one number, divided by div (to base units).
func (jr *jobReader) uintFile(dir, name string, desc *collector.Desc, t prometheus.ValueType, div float64, extra ...string) {
	b := jr.read(dir, name)
	if b == nil {
		return
	}
	v, err := cgroupfs.ParseUint(b)
	if err != nil {
		jr.malformed(dir, name, err)
		return
	}
	jr.emit(desc, t, float64(v)/div, extra...)
}

// limitFile emits a limit unless it is unlimited; it returns the value.
func (jr *jobReader) limitFile(dir, name string, desc *collector.Desc) (uint64, bool) {
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

// cpuCount emits the number of CPUs in a cpuset file and returns them.
func (jr *jobReader) cpuset(dir, name string) []int {
	b := jr.readStatic(dir, name)
	if b == nil {
		return nil
	}
	cpus, err := cgroupfs.ParseCPUList(b)
	if err != nil {
		jr.malformed(dir, name, err)
		return nil
	}
	jr.emit(jr.d.cpus, prometheus.GaugeValue, float64(len(cpus)))
	return cpus
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
