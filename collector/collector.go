// SPDX-License-Identifier: Apache-2.0

// Package collector holds the collector framework: named collectors, one
// discovery snapshot per scrape, concurrent collection under a deadline.
// The collectors live in its sub-packages; collector/registry lists them.
package collector

import (
	"errors"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/pflag"

	"github.com/jobscope/jobscope/collector/provide"
	"github.com/jobscope/jobscope/discovery"
)

// Collector emits const metrics for one scrape.
type Collector interface {
	// Collect sends metrics to ch. An error marks the collector failed for
	// this scrape (success 0); what it sent before still counts.
	Collect(s *Scrape, ch chan<- prometheus.Metric) error
}

// ErrNoData says the collector has nothing to read on this node (no GPU, no
// RAPL, ...). It is logged once and reported as success 0.
var ErrNoData = errors.New("no data on this node")

// ErrUnavailable marks a collector that could not start (its cause was logged
// at start-up); each scrape reports it as success 0 without a new log line.
var ErrUnavailable = errors.New("collector unavailable")

// CauseError names why a collector failed, for the cause label of
// jobscope_collector_errors_total: an operator's query (or alert) can tell
// "no cgroup hierarchy" from a file that failed to parse.
type CauseError struct {
	Cause string // a short snake_case word
	Err   error
}

func (e *CauseError) Error() string { return e.Err.Error() }
func (e *CauseError) Unwrap() error { return e.Err }

// WithCause marks err with a cause label.
func WithCause(cause string, err error) error { return &CauseError{Cause: cause, Err: err} }

// causeOr returns the cause err carries, else def.
func causeOr(err error, def string) string {
	var ce *CauseError
	if errors.As(err, &ce) && ce.Cause != "" {
		return ce.Cause
	}
	return def
}

// Env is what every collector may use: paths, the cgroup layout, the
// logger, and the providers started for the enabled collectors.
type Env struct {
	ProcFS string
	SysFS  string
	// Layout is the node's cgroup hierarchies, detected once at start (or
	// from --path.cgroupfs): the one source of truth for the cgroup root.
	Layout discovery.Layout
	Logger *slog.Logger
	// Level is --metrics.level: how much per-job detail to emit.
	Level Level

	// Providers are the shared inputs, started before the collectors are
	// built: those the enabled collectors' Needs name (provide.Need).
	Providers *provide.Set
}

// Mode is the role of the exporter: a compute node or the controller.
type Mode string

const (
	ModeNode       Mode = "node"
	ModeController Mode = "controller"
)

// Factory describes a collector and how to build it.
type Factory struct {
	Name string
	Help string
	// DefaultIn lists the modes in which the collector is on by default.
	DefaultIn []Mode
	// Flags registers the collector's own options on fs and returns its
	// constructor, which reads those options. It may be nil.
	Flags func(fs *pflag.FlagSet) func(env *Env) (Collector, error)
	// NeedsJobs says whether the collector uses job discovery.
	NeedsJobs bool
	// Needs names the providers the collector uses (their Name constants):
	// they are started, once, when any collector needing them is on.
	Needs []string
	// Descs lists the metrics the collector can emit, for docs/metrics.md.
	Descs func() []*Desc
}

// DefaultOn reports whether the collector is on by default in mode m.
func (f Factory) DefaultOn(m Mode) bool {
	for _, d := range f.DefaultIn {
		if d == m {
			return true
		}
	}
	return false
}
