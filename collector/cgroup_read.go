package collector

import (
	"errors"
	"os"
	"path/filepath"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/jobscope/jobscope/collector/cgroupfs"
	"github.com/jobscope/jobscope/collector/discovery"
)

// jobReader reads one job's cgroup files during one scrape.
type jobReader struct {
	r       *cgroupfs.Reader
	s       *Scrape
	ch      chan<- prometheus.Metric
	d       *cgroupDescs
	job     *discovery.Job
	labels  []string
	devices *deviceNames
	gone    bool // the job's cgroup vanished: stop quietly
}

// read returns a file's content, or nil when it is absent (the kernel or
// the controller does not provide it), gone, or unreadable (reported).
func (jr *jobReader) read(dir, name string) []byte {
	if jr.gone || dir == "" {
		return nil
	}
	b, err := jr.r.Read(filepath.Join(dir, name))
	switch {
	case err == nil:
		return b
	case cgroupfs.Gone(err):
		if _, serr := os.Stat(dir); serr != nil {
			jr.gone = true
		}
	case errors.Is(err, os.ErrPermission):
		jr.s.Problem("permission_denied", err)
	default:
		jr.s.Problem("read_failed", err)
	}
	return nil
}

func (jr *jobReader) malformed(dir, name string, err error) {
	jr.s.Problem("malformed_file", &discovery.DirError{Path: filepath.Join(dir, name), Why: err.Error()})
}

func (jr *jobReader) emit(desc *prometheus.Desc, t prometheus.ValueType, v float64, extra ...string) {
	lv := jr.labels
	if len(extra) > 0 {
		lv = append(append(make([]string, 0, len(lv)+len(extra)), lv...), extra...)
	}
	jr.ch <- prometheus.MustNewConstMetric(desc, t, v, lv...)
}

// uintFile emits a file holding one number, divided by div (to base units).
func (jr *jobReader) uintFile(dir, name string, desc *prometheus.Desc, t prometheus.ValueType, div float64, extra ...string) {
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
func (jr *jobReader) limitFile(dir, name string, desc *prometheus.Desc) (uint64, bool) {
	b := jr.read(dir, name)
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

// flat parses a flat-keyed file; a malformed line is reported, the good
// lines still count.
func (jr *jobReader) flat(dir, name string, fn func(k string, v uint64)) bool {
	b := jr.read(dir, name)
	if b == nil {
		return false
	}
	seen := make(map[string]bool, 32)
	err := cgroupfs.ParseFlatKeyed(b, func(k string, v uint64) {
		// A garbage file may repeat a key; a repeated series would fail the scrape.
		if !seen[k] {
			seen[k] = true
			fn(k, v)
		}
	})
	if err != nil {
		jr.malformed(dir, name, err)
	}
	return true
}

// cpuCount emits the number of CPUs in a cpuset file and returns them.
func (jr *jobReader) cpuset(dir, name string) []int {
	b := jr.read(dir, name)
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
