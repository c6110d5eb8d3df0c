package collector

import (
	"reflect"

	"github.com/prometheus/client_golang/prometheus"
)

// DescsOf returns every *prometheus.Desc field of a descriptor struct, so
// a collector lists its metrics for docs/metrics.md without repeating them.
func DescsOf(v any) []*prometheus.Desc {
	rv := reflect.ValueOf(v)
	if rv.Kind() == reflect.Pointer {
		rv = rv.Elem()
	}
	var out []*prometheus.Desc
	descType := reflect.TypeOf((*prometheus.Desc)(nil))
	for i := 0; i < rv.NumField(); i++ {
		f := rv.Field(i)
		switch {
		case f.Type() == descType && !f.IsNil():
			out = append(out, (*prometheus.Desc)(f.UnsafePointer()))
		case f.Kind() == reflect.Struct:
			out = append(out, DescsOf(f.Interface())...)
		}
	}
	return out
}

// frameworkDescs are the metrics the exporter itself emits.
func frameworkDescs() []*prometheus.Desc {
	e := NewExporter(nil, nil, NewProblems(nil), nil, BuildInfo{})
	dd := e.discoveryDescs
	return []*prometheus.Desc{e.durationDesc, e.successDesc, e.buildDesc, e.jobsDesc, NewProblems(nil).desc,
		dd.dirs, dd.skipped, dd.squeueUp, dd.squeueRuns, dd.squeueErrors}
}
