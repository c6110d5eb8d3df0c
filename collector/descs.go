package collector

import (
	"reflect"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/jobscope/jobscope/collector/discovery"
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
	return []*prometheus.Desc{e.durationDesc, e.successDesc, e.buildDesc, e.jobsDesc, NewProblems(nil).desc}
}

// JobDesc builds a per-job descriptor: the job labels, then extra.
func JobDesc(name, help string, extra ...string) *prometheus.Desc {
	return prometheus.NewDesc(name, help, append(append([]string{}, discovery.JobLabelNames...), extra...), nil)
}

// CPUCoreDesc is slurm_job_cpu_core_seconds_total: one name, one HELP,
// whichever collector (cgroup or ebpf) provides the series on this node.
func CPUCoreDesc() *prometheus.Desc {
	return JobDesc("slurm_job_cpu_core_seconds_total",
		"CPU time of the job per core: the ebpf collector's sched_switch accounting while it is loaded (v1 and v2), else v1 cpuacct.usage_percpu for the allocated cores. One source per node.", "core")
}
