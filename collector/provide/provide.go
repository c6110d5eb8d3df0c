// SPDX-License-Identifier: Apache-2.0

// Package provide holds what the collectors share below the collector
// framework: the Provider contract and the Set that builds providers once,
// only when an enabled collector needs them. Each shared input (a job's
// cgroup reading, the eBPF programs, the GPU backend, the Slurm runner) is
// one provider in its own sub-package, owning its flags; the framework and
// cmd know them only through this package, so a new shared input is one new
// provider and one registry line.
package provide

import (
	"context"
	"log/slog"
	"time"

	"github.com/spf13/pflag"

	"github.com/jobscope/jobscope/discovery"
	"github.com/jobscope/jobscope/slurmcli"
)

// Provider is one shared input of the collectors.
type Provider interface {
	// Name is what collectors list in their Factory's Needs.
	Name() string
	// Flags registers the provider's own options on fs (it may add none).
	Flags(fs *pflag.FlagSet)
	// Start builds the resource from the parsed flags. It runs at most
	// once, only when an enabled collector needs the provider; its error
	// is handed to each of those collectors (Need), which decide whether
	// it leaves them unavailable.
	Start(env *Env) error
	// Close releases what Start built; it runs only after Start.
	Close() error
}

// Env is what providers are started with: the node's paths and cgroup
// layout, the logger, and the providers started before (registry order).
type Env struct {
	ProcFS, SysFS string
	Layout        discovery.Layout
	Logger        *slog.Logger
	Set           *Set
	// Now is the clock of providers that poll (nil: time.Now); tests drive
	// the Slurm cache through simulated hours with it.
	Now func() time.Time
}

// ProcFSOr returns the procfs root, /proc when none was given.
func (e *Env) ProcFSOr() string {
	if e.ProcFS != "" {
		return e.ProcFS
	}
	return "/proc"
}

// Scrape is what a provider sees of one scrape (the framework's Scrape is
// one): its deadline, serial number, jobs, and a per-scrape memo, so a
// reading several collectors share is taken once.
type Scrape interface {
	Context() context.Context
	Serial() uint64
	Jobs() []*discovery.Job
	// Once returns fn's value, computed on the first call with key in this
	// scrape; later calls with the same key wait for it and get it too.
	Once(key any, fn func() any) any
}

// ModeAnnotation is the pflag annotation that marks a flag with the modes
// in which its collectors (or, for a provider's, the collectors needing
// it) are on by default; --help and the man page group flags by it.
const ModeAnnotation = "jobscope.collector-modes"

// ModeNode is node mode's name in a ModeAnnotation.
const ModeNode = "node"

// JobQueue is a provider that gives job discovery its background Slurm
// queue for job metadata; cmd finds it by this interface, not by name.
type JobQueue interface {
	NodeQueue(logger *slog.Logger) (Queue, error)
}

// Queue is discovery's background queue: Run is nil when it is off.
type Queue struct {
	Run               func(ctx context.Context, req discovery.QueueRequest) ([]slurmcli.NodeJob, error)
	Interval, Timeout time.Duration
}
