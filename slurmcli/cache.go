// SPDX-License-Identifier: Apache-2.0

package slurmcli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jobscope/jobscope/internal/poll"
)

// Source is one kind of cluster data, fetched by one command per refresh.
type Source string

const (
	SourceJobs   Source = "jobs"   // squeue
	SourceNodes  Source = "nodes"  // sinfo --json, or scontrol show node -o
	SourceShares Source = "shares" // sshare
	SourceDiag   Source = "diag"   // sdiag
	SourceSacct  Source = "sacct"  // sacct, incremental; see EnableSacct
	// SourceReservations and SourceLicenses: scontrol show reservation and
	// licenses (JSON from 23.02, text before).
	SourceReservations Source = "reservations"
	SourceLicenses     Source = "licenses"
)

// Sources lists every source in a fixed order.
var Sources = []Source{SourceJobs, SourceNodes, SourceShares, SourceDiag, SourceSacct, SourceReservations, SourceLicenses}

// SlowSources are polled every SlowInterval: each costs slurmctld one RPC
// a run, and what they report changes seldom. Fairshare (sshare) is
// recomputed by slurmctld's priority plugin once per PriorityCalcPeriod
// (5 minutes by default), so polling it more often reads the same numbers
// again. Reservations change when an admin creates or updates one (their
// start and end are fixed times; the CPUs idle and allocated in them come
// from the nodes source, polled every Interval). Licenses change when a
// job that holds one starts or ends, or at a reconfigure. Jobs, nodes
// (node states and allocations move with every job) and sdiag
// (slurmctld's own health: threads, agent queue, cycle times) stay at
// Interval; sacct reads only what ended since its previous query.
var SlowSources = []Source{SourceShares, SourceReservations, SourceLicenses}

// Format picks JSON or text output where a command has both.
type Format string

const (
	FormatAuto Format = "auto" // JSON, falling back to text for good if refused
	FormatJSON Format = "json"
	FormatText Format = "text"
)

// ParseFormat checks a --slurm.format value.
func ParseFormat(s string) (Format, error) {
	switch f := Format(s); f {
	case FormatAuto, FormatJSON, FormatText:
		return f, nil
	}
	return "", fmt.Errorf("slurm format %q: want auto, json or text", s)
}

// CacheConfig configures a Cache.
type CacheConfig struct {
	Runner *Runner
	// Interval is the poll interval: at most one run of each command per
	// interval.
	Interval time.Duration
	// SlowInterval is the poll interval of SlowSources, whose data slurmctld
	// changes seldom (0 or less than Interval: Interval). A failed run of
	// one is retried after Interval.
	SlowInterval time.Duration
	// MaxAge drops a source's last good value once it is older (0: never).
	MaxAge time.Duration
	Format Format
	// Restd, when set, is where jobs and nodes come from (slurmrestd),
	// instead of squeue and sinfo; Format then applies to the other
	// commands only. Its requests are counted in Runner's Stats.
	Restd  *Restd
	Logger *slog.Logger
	// Now is the clock (tests set it).
	Now func() time.Time
}

// scrapeWait: a scrape waits for a command in flight until shortly before
// its own deadline (a tenth of the time left, at most half a second, is
// kept to turn the values into metrics), so a hanging command never makes
// a scrape miss its deadline.
var scrapeWait = poll.Share{Fraction: 0.9, MaxReserve: 500 * time.Millisecond}

// Cache keeps each source's latest data, one typed poller per source: the
// first caller after the poll interval starts the source's command; every
// other caller, however many scrapes run at once, waits for that same run
// (single-flight) or, if its own deadline comes first, takes the previous
// value. A source nobody asks for never runs.
type Cache struct {
	cfg CacheConfig

	Jobs   *poll.Poller[[]Job]
	Nodes  *poll.Poller[[]Node]
	Shares *poll.Poller[[]Share]
	Diag   *poll.Poller[*Diag]
	// Sacct is nil unless EnableSacct was called.
	Sacct        *poll.Poller[SacctCounts]
	Reservations *poll.Poller[[]Reservation]
	Licenses     *poll.Poller[[]License]

	mu   sync.Mutex
	want map[Source]bool

	queueOnce sync.Once
	queue     *QueueTracker
}

// NewCache builds a cache; nothing runs until a source is asked for.
func NewCache(cfg CacheConfig) *Cache {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Format == "" {
		cfg.Format = FormatAuto
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	c := &Cache{cfg: cfg, want: map[Source]bool{}}
	// The previous poll's job count sizes the next poll's list: a queue
	// changes little between two polls, and a list grown by doubling holds
	// up to twice the jobs and copies them on the way, beside the previous
	// list that is still served. Read and written by this source's fetch
	// only (one at a time).
	if cfg.Restd != nil {
		// Jobs change every poll on a busy cluster, but slurmctld packs
		// them only when they did (update_time); nodes are asked whole:
		// their load and free memory come with slurmd's pings, which
		// may not move the nodes' last_update.
		c.Jobs = newSourceFunc(c, SourceJobs, restdFetch(cfg.Restd, RestdJobs, "/jobs", true, restdJobs))
		c.Nodes = newSourceFunc(c, SourceNodes, restdFetch(cfg.Restd, RestdNodes, "/nodes", false, restdNodes))
	} else {
		lastJobs := 0
		c.Jobs = newSource(c, SourceJobs,
			fixed("squeue", SqueueJSONArgs, func(r io.Reader) ([]Job, error) {
				jobs, err := parseSqueueJSONSized(r, lastJobs)
				if err == nil {
					lastJobs = len(jobs)
				}
				return jobs, err
			}),
			&variant[[]Job]{"squeue", SqueueTextArgs, ParseSqueueText})
		c.Nodes = newSource(c, SourceNodes,
			fixed("sinfo", SinfoJSONArgs, ParseSinfoJSON),
			fixed("scontrol", ScontrolNodeArgs, ParseScontrolNodes))
	}
	c.Shares = newSource(c, SourceShares, nil,
		fixed("sshare", SshareArgs, ParseSshare))
	c.Diag = newSource(c, SourceDiag, nil,
		fixed("sdiag", nil, ParseSdiag))
	c.Reservations = newSource(c, SourceReservations,
		fixed("scontrol", ReservationJSONArgs, ParseReservationsJSON),
		fixed("scontrol", ReservationTextArgs, func(r io.Reader) ([]Reservation, error) {
			return ParseReservationsText(r, time.Local)
		}))
	c.Licenses = newSource(c, SourceLicenses,
		fixed("scontrol", LicenseJSONArgs, ParseLicensesJSON),
		fixed("scontrol", LicenseTextArgs, ParseLicensesText))
	return c
}

// ErrAccountingDisabled is sacct's answer on a cluster without accounting
// storage (no slurmdbd): not a failure but a source with nothing to give.
var ErrAccountingDisabled = errors.New("slurm accounting storage is disabled (AccountingStorageType): no sacct data")

// accountingDisabled tells sacct's "Slurm accounting storage is disabled"
// (exit status 1, Slurm 22.05 to 26.05) from a failing slurmdbd.
func accountingDisabled(err error) bool {
	var ee *ExitError
	return errors.As(err, &ee) && strings.Contains(strings.ToLower(ee.Stderr), "accounting storage is disabled")
}

// EnableSacct makes the cache count ended jobs with incremental sacct
// queries (the sacct collector). Call it before the first scrape. Where
// Slurm has no accounting storage, the first answer says so: it is logged
// once and sacct is not run again (the source serves ErrAccountingDisabled).
func (c *Cache) EnableSacct(s *SacctCounter) {
	c.Want(SourceSacct)
	off := false // read and written by this source's fetch only
	// The window moves with each query: the args are built per run.
	c.Sacct = newSourceFunc(c, SourceSacct, func(ctx context.Context) (SacctCounts, string, error) {
		if off {
			return SacctCounts{}, "sacct", ErrAccountingDisabled
		}
		now := c.cfg.Now()
		from, to, args := s.window(now)
		// sacct's columns here hold no user text (no job name): plain -P.
		jobs, err := runParse(ctx, c.cfg.Runner, fixed("sacct", args, ParseSacct))
		if accountingDisabled(err) {
			off = true
			c.cfg.Logger.Info("slurm accounting storage is disabled: the sacct source is off (no ended-job counts); "+
				"turn the slurm_sacct collector off to silence this", "source", string(SourceSacct), "err", err)
			return SacctCounts{}, "sacct", ErrAccountingDisabled
		}
		if err != nil {
			return SacctCounts{}, "sacct", err
		}
		s.add(jobs, from, to, now)
		return s.Counts(), "sacct", nil
	})
}

// Interval is how often src's command runs: SlowInterval for a slow
// source, never more often than Interval.
func (c *Cache) Interval(src Source) time.Duration {
	if slices.Contains(SlowSources, src) {
		return max(c.cfg.SlowInterval, c.cfg.Interval)
	}
	return c.cfg.Interval
}

// Runner returns the command runner (for its counters).
func (c *Cache) Runner() *Runner { return c.cfg.Runner }

// Now is the cache's clock.
func (c *Cache) Now() time.Time { return c.cfg.Now() }

// MaxAge is how old a value may be served (0: any age).
func (c *Cache) MaxAge() time.Duration { return c.cfg.MaxAge }

// Want records that an enabled collector reads src, so Refresh runs it.
func (c *Cache) Want(src Source) {
	c.mu.Lock()
	c.want[src] = true
	c.mu.Unlock()
}

// Refresh asks the given sources (none: every wanted one) at once, so that
// a caller waits for this interval's runs, within its share of ctx's
// deadline, without adding any run.
func (c *Cache) Refresh(ctx context.Context, only ...Source) {
	gets := map[Source]func(){
		SourceJobs: func() { c.Jobs.Get(ctx) }, SourceNodes: func() { c.Nodes.Get(ctx) },
		SourceShares: func() { c.Shares.Get(ctx) }, SourceDiag: func() { c.Diag.Get(ctx) },
		SourceReservations: func() { c.Reservations.Get(ctx) }, SourceLicenses: func() { c.Licenses.Get(ctx) },
	}
	if c.Sacct != nil {
		gets[SourceSacct] = func() { c.Sacct.Get(ctx) }
	}
	var wg sync.WaitGroup
	c.mu.Lock()
	for src, get := range gets {
		if len(only) == 0 && c.want[src] || slices.Contains(only, src) {
			wg.Add(1)
			go func() { defer wg.Done(); get() }()
		}
	}
	c.mu.Unlock()
	wg.Wait()
}

// Close stops running commands; later Gets serve what is cached.
func (c *Cache) Close() {
	c.Jobs.Close()
	c.Nodes.Close()
	c.Shares.Close()
	c.Diag.Close()
	c.Reservations.Close()
	c.Licenses.Close()
	if c.Sacct != nil {
		c.Sacct.Close()
	}
}

// Serve applies the serving rules to a source's latest result: its last
// good value while younger than maxAge (0: any age), with an error when
// the value is not from the latest run (it failed, or is still running).
// ok is false when there is nothing to serve; stale values are served with
// their age, never past maxAge.
func Serve[T any](r poll.Result[T], maxAge time.Duration) (v T, ok bool, err error) {
	err = r.Err
	if !r.Running.IsZero() && err == nil {
		err = fmt.Errorf("refresh still running after %s, serving the previous data", r.At.Sub(r.Running).Round(time.Millisecond))
	}
	if !r.Has() {
		if err == nil {
			err = errors.New("no data yet")
		}
		return v, false, err
	}
	if maxAge > 0 && r.Age() > maxAge {
		return v, false, fmt.Errorf("last good data is %s old, over the maximum age %s (latest error: %v)", r.Age().Round(time.Second), maxAge, r.Err)
	}
	return r.Value, true, err
}

// variant is one way to get a source: a command, its arguments and the
// parser of its output. Both get the run's separator (NewSeparator): text
// forms that hold user text join their fields with it.
type variant[T any] struct {
	cmd   string
	args  func(sep string) []string
	parse func(r io.Reader, sep string) (T, Refused, error)
}

// fixed is a variant whose arguments and parser need no separator: JSON,
// and text forms that hold no user text.
func fixed[T any](cmd string, args []string, parse func(io.Reader) (T, error)) *variant[T] {
	return &variant[T]{cmd, func(string) []string { return args }, func(r io.Reader, _ string) (T, Refused, error) {
		v, err := parse(r)
		return v, Refused{}, err
	}}
}

// newSource polls src through its JSON variant (nil: none) or its text
// one, as the configured format says; in auto mode a command that refuses
// --json (old version, no serializer plugin) or whose JSON lacks what is
// needed is asked in text from then on.
func newSource[T any](c *Cache, src Source, jsonV, textV *variant[T]) *poll.Poller[T] {
	noJSON := false // read and written by this source's fetch only (one at a time)
	return newSourceFunc(c, src, func(ctx context.Context) (T, string, error) {
		useJSON := jsonV != nil && (c.cfg.Format == FormatJSON || c.cfg.Format == FormatAuto && !noJSON)
		v := textV
		if useJSON {
			v = jsonV
		}
		out, err := runParse(ctx, c.cfg.Runner, v)
		if useJSON && c.cfg.Format == FormatAuto && (jsonRefused(err) || errors.Is(err, ErrJSONShape)) {
			c.cfg.Logger.Info("slurm command has no usable --json; using its text output from now on",
				"source", string(src), "command", v.cmd, "err", err)
			noJSON, v = true, textV
			out, err = runParse(ctx, c.cfg.Runner, v)
		}
		return out, v.cmd, err
	})
}

// newSourceFunc polls fetch once per interval, logging when the source
// starts and stops failing (not every failed poll).
func newSourceFunc[T any](c *Cache, src Source, fetch func(context.Context) (T, string, error)) *poll.Poller[T] {
	failing := false // touched by this source's fetch only
	return poll.New(func(ctx context.Context) (T, error) {
		v, cmd, err := fetch(ctx)
		switch {
		case errors.Is(err, ErrAccountingDisabled):
			return v, err // logged once where it was found; not a failure
		case err != nil && !failing:
			c.cfg.Logger.Warn("slurm command failing; serving the last good data with its age",
				"source", string(src), "command", cmd, "err", err)
		case err == nil && failing:
			c.cfg.Logger.Info("slurm command works again", "source", string(src), "command", cmd)
		}
		failing = err != nil
		return v, err
	}, poll.Config{Interval: c.Interval(src), Retry: c.cfg.Interval, Wait: scrapeWait, Now: c.cfg.Now})
}

// runParse runs a variant's command and parses its output. Records the
// parser left out are counted and logged once by the runner; the rest is
// the value.
func runParse[T any](ctx context.Context, r *Runner, v *variant[T]) (T, error) {
	var zero T
	sep := NewSeparator()
	var (
		val  T
		ref  Refused
		perr error
	)
	// The parser reads the command's stdout as it comes: the output is
	// never held whole, only the parsed value.
	err := r.Stream(ctx, v.cmd, v.args(sep), func(out io.Reader) error {
		val, ref, perr = v.parse(out, sep)
		return perr
	})
	if err != nil && err != perr { //nolint:errorlint // the parser's own error, as it returned it
		return zero, err
	}
	if perr != nil {
		r.Stats().ParseError(v.cmd)
		return zero, fmt.Errorf("%s output: %w", v.cmd, perr)
	}
	_ = r.refused(v.cmd, ref) // counted and logged there; the value is good
	return val, nil
}

// jsonRefused tells "this squeue/sinfo has no --json" (old version, or no
// serializer plugin installed) from a failure of slurmctld.
func jsonRefused(err error) bool {
	var ee *ExitError
	if !errors.As(err, &ee) {
		return false
	}
	s := strings.ToLower(ee.Stderr)
	for _, m := range []string{"unrecognized option", "invalid option", "unknown option",
		"serializer", "data_parser", "plugin"} {
		if strings.Contains(s, m) {
			return true
		}
	}
	return false
}
