package slurmcli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"
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

// Result is one source's latest data. Value is the last good value, taken
// at Good (zero when there never was one); Err is the latest attempt's
// error, nil when that attempt gave Value.
type Result struct {
	Value   any // []Job, []Node, []Share, *Diag, SacctCounts, []Reservation or []License
	Good    time.Time
	Err     error
	Command string // the command that produced (or failed to produce) it
	// Running is set when a refresh of this source was still running as
	// the snapshot was handed out (the scrape could not wait longer).
	Running time.Time
}

// Fresh reports whether the value comes from the latest refresh: it
// succeeded and no newer one is overdue.
func (r Result) Fresh() bool { return !r.Good.IsZero() && r.Err == nil && r.Running.IsZero() }

// Snapshot is the cluster as the latest refreshes saw it, by source.
type Snapshot struct {
	Results map[Source]Result
	Now     time.Time // when the snapshot was handed out, for ages
	MaxAge  time.Duration
}

// Value returns the source's last good value while it is younger than the
// maximum age, with its age and the latest attempt's error. ok is false when
// there is no value to serve (never fetched, or too old): stale values are
// served with their age, never past the maximum.
func (s *Snapshot) Value(src Source) (v any, age time.Duration, ok bool, err error) {
	r := s.Results[src]
	if !r.Running.IsZero() && r.Err == nil {
		r.Err = fmt.Errorf("%s still running after %s, serving the previous data", r.Command, s.Now.Sub(r.Running).Round(time.Millisecond))
	}
	age, has := s.Age(src)
	if !has {
		if r.Err == nil {
			r.Err = errors.New("no data yet")
		}
		return nil, 0, false, r.Err
	}
	if s.MaxAge > 0 && age > s.MaxAge {
		return nil, age, false, fmt.Errorf("last good data is %s old, over the maximum age %s (latest error: %v)", age.Round(time.Second), s.MaxAge, r.Err)
	}
	return r.Value, age, true, r.Err
}

// Age is how old the source's last good value is; ok is false when there
// never was one.
func (s *Snapshot) Age(src Source) (time.Duration, bool) {
	r, ok := s.Results[src]
	if !ok || r.Good.IsZero() {
		return 0, false
	}
	return max(s.Now.Sub(r.Good), 0), true
}

// CacheConfig configures a Cache.
type CacheConfig struct {
	Runner *Runner
	// Interval is the poll interval: at most one refresh starts per interval.
	Interval time.Duration
	// MaxAge drops a source's last good value once it is older (0: never).
	MaxAge time.Duration
	Format Format
	Logger *slog.Logger
	// Now is the clock (tests set it).
	Now func() time.Time
}

// Cache keeps one snapshot per poll interval. The first caller after the
// interval starts the refresh; every other caller, however many scrapes run
// at once, waits for that same refresh (single-flight) or, if its own
// deadline comes first, takes the previous snapshot.
type Cache struct {
	cfg CacheConfig

	ctx    context.Context // ends at Close: kills running commands
	cancel context.CancelFunc

	mu        sync.Mutex
	want      map[Source]bool
	results   map[Source]Result
	inflight  chan struct{}        // closed when the running refresh ends
	running   map[Source]time.Time // sources of the running refresh not yet in
	lastStart time.Time
	noJSON    map[Source]bool // auto mode: JSON refused, text from now on
	failing   map[Source]bool // for logging state changes only
	sacct     *SacctCounter   // only touched by the (single) refresh

	queueOnce sync.Once
	queue     *QueueTracker
}

// EnableSacct makes refreshes count ended jobs with incremental sacct
// queries (the sacct collector).
func (c *Cache) EnableSacct(s *SacctCounter) {
	c.mu.Lock()
	c.sacct = s
	c.want[SourceSacct] = true
	c.mu.Unlock()
}

// NewCache builds a cache; nothing runs until the first Get.
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
	ctx, cancel := context.WithCancel(context.Background())
	return &Cache{
		cfg: cfg, ctx: ctx, cancel: cancel,
		want: map[Source]bool{}, results: map[Source]Result{},
		noJSON: map[Source]bool{}, failing: map[Source]bool{}, running: map[Source]time.Time{},
	}
}

// Runner returns the command runner (for its counters and for scontrol
// lookups outside the snapshot).
func (c *Cache) Runner() *Runner { return c.cfg.Runner }

// Now is the cache's clock.
func (c *Cache) Now() time.Time { return c.cfg.Now() }

// Interval is the poll interval.
func (c *Cache) Interval() time.Duration { return c.cfg.Interval }

// Want adds a source to what each refresh fetches. Collectors call it when
// they are built, so disabled collectors cost no command runs.
func (c *Cache) Want(src Source) {
	c.mu.Lock()
	c.want[src] = true
	c.mu.Unlock()
}

// Wanted lists the sources refreshes fetch, in a fixed order.
func (c *Cache) Wanted() []Source {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []Source
	for _, s := range Sources {
		if c.want[s] {
			out = append(out, s)
		}
	}
	return out
}

// Close stops running commands; later Gets serve what is cached.
func (c *Cache) Close() { c.cancel() }

// Get returns the current snapshot, starting a refresh if the last one
// started an interval ago or more. It waits for a running refresh until
// shortly before ctx's deadline, then hands out what it has, so a hanging
// command never makes a scrape miss its deadline.
func (c *Cache) Get(ctx context.Context) *Snapshot {
	c.mu.Lock()
	now := c.cfg.Now()
	if c.inflight == nil && c.ctx.Err() == nil && (c.lastStart.IsZero() || now.Sub(c.lastStart) >= c.cfg.Interval) {
		c.inflight = make(chan struct{})
		c.lastStart = now
		go c.refresh(c.inflight)
	}
	done := c.inflight
	c.mu.Unlock()

	if done != nil {
		wctx, cancel := waitContext(ctx)
		select {
		case <-done:
		case <-wctx.Done():
		}
		cancel()
	}
	return c.snapshot()
}

// waitContext ends a little before ctx's deadline, leaving the collector
// time to turn the snapshot into metrics: a tenth of the time left, at most
// half a second.
func waitContext(ctx context.Context) (context.Context, context.CancelFunc) {
	dl, ok := ctx.Deadline()
	if !ok {
		return context.WithCancel(ctx)
	}
	margin := min(time.Until(dl)/10, 500*time.Millisecond)
	return context.WithDeadline(ctx, dl.Add(-margin))
}

func (c *Cache) snapshot() *Snapshot {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := &Snapshot{Results: make(map[Source]Result, len(c.results)), Now: c.cfg.Now(), MaxAge: c.cfg.MaxAge}
	for k, v := range c.results {
		s.Results[k] = v
	}
	for k, start := range c.running {
		r := s.Results[k]
		r.Running = start
		s.Results[k] = r
	}
	return s
}

// refresh runs every wanted source's command concurrently and publishes
// each result as soon as it is in, so a scrape that stops waiting still
// gets the sources that were fast.
func (c *Cache) refresh(done chan struct{}) {
	var wg sync.WaitGroup
	srcs := c.Wanted()
	c.mu.Lock()
	start := c.cfg.Now()
	for _, src := range srcs {
		c.running[src] = start
	}
	c.mu.Unlock()
	for _, src := range srcs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			val, cmd, err := c.fetch(src)
			c.publish(src, val, cmd, err)
		}()
	}
	wg.Wait()
	c.mu.Lock()
	c.inflight = nil
	c.mu.Unlock()
	close(done)
}

func (c *Cache) publish(src Source, val any, cmd string, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.running, src)
	r := c.results[src]
	r.Command, r.Err = cmd, err
	if err == nil {
		r.Value, r.Good = val, c.cfg.Now()
	}
	c.results[src] = r
	// Log changes of state, not every failed poll.
	switch {
	case err != nil && !c.failing[src]:
		c.cfg.Logger.Warn("slurm command failing; serving the last good data with its age",
			"source", string(src), "command", cmd, "err", err)
	case err == nil && c.failing[src]:
		c.cfg.Logger.Info("slurm command works again", "source", string(src), "command", cmd)
	}
	c.failing[src] = err != nil
}

// fetch runs one source's command in the configured format.
func (c *Cache) fetch(src Source) (any, string, error) {
	useJSON := c.cfg.Format == FormatJSON
	if c.cfg.Format == FormatAuto {
		c.mu.Lock()
		useJSON = !c.noJSON[src]
		c.mu.Unlock()
	}
	val, cmd, err := c.fetchAs(src, useJSON)
	if useJSON && c.cfg.Format == FormatAuto && (jsonRefused(err) || errors.Is(err, ErrJSONShape)) {
		c.cfg.Logger.Info("slurm command has no usable --json; using its text output from now on",
			"source", string(src), "command", cmd, "err", err)
		c.mu.Lock()
		c.noJSON[src] = true
		c.mu.Unlock()
		return c.fetchAs(src, false)
	}
	return val, cmd, err
}

func (c *Cache) fetchAs(src Source, useJSON bool) (any, string, error) {
	r := c.cfg.Runner
	var cmd string
	var args []string
	var parse func([]byte) (any, error)
	switch {
	case src == SourceJobs && useJSON:
		cmd, args = "squeue", SqueueJSONArgs
		parse = func(b []byte) (any, error) { return ParseSqueueJSON(bytes.NewReader(b)) }
	case src == SourceJobs:
		cmd, args = "squeue", SqueueTextArgs
		parse = func(b []byte) (any, error) { return ParseSqueueText(bytes.NewReader(b)) }
	case src == SourceNodes && useJSON:
		cmd, args = "sinfo", SinfoJSONArgs
		parse = func(b []byte) (any, error) { return ParseSinfoJSON(bytes.NewReader(b)) }
	case src == SourceNodes:
		cmd, args = "scontrol", ScontrolNodeArgs
		parse = func(b []byte) (any, error) { return ParseScontrolNodes(bytes.NewReader(b)) }
	case src == SourceShares:
		cmd, args = "sshare", SshareArgs
		parse = func(b []byte) (any, error) { return ParseSshare(bytes.NewReader(b)) }
	case src == SourceDiag:
		cmd, args = "sdiag", nil
		parse = func(b []byte) (any, error) { return ParseSdiag(bytes.NewReader(b)) }
	case src == SourceSacct:
		c.mu.Lock()
		counter := c.sacct
		c.mu.Unlock()
		if counter == nil {
			return nil, "", fmt.Errorf("sacct source without a counter")
		}
		var from, to time.Time
		now := c.cfg.Now()
		from, to, args = counter.window(now)
		cmd = "sacct"
		parse = func(b []byte) (any, error) {
			jobs, err := ParseSacct(bytes.NewReader(b))
			if err != nil {
				return nil, err
			}
			counter.add(jobs, from, to, now)
			return counter.Counts(), nil
		}
	case src == SourceReservations && useJSON:
		cmd, args = "scontrol", ReservationJSONArgs
		parse = func(b []byte) (any, error) { return ParseReservationsJSON(bytes.NewReader(b)) }
	case src == SourceReservations:
		cmd, args = "scontrol", ReservationTextArgs
		parse = func(b []byte) (any, error) { return ParseReservationsText(bytes.NewReader(b), time.Local) }
	case src == SourceLicenses && useJSON:
		cmd, args = "scontrol", LicenseJSONArgs
		parse = func(b []byte) (any, error) { return ParseLicensesJSON(bytes.NewReader(b)) }
	case src == SourceLicenses:
		cmd, args = "scontrol", LicenseTextArgs
		parse = func(b []byte) (any, error) { return ParseLicensesText(bytes.NewReader(b)) }
	default:
		return nil, "", fmt.Errorf("unknown source %q", src)
	}
	out, err := r.Run(c.ctx, cmd, args...)
	if err != nil {
		return nil, cmd, err
	}
	v, err := parse(out)
	if err != nil {
		r.Stats().ParseError(cmd)
		return nil, cmd, fmt.Errorf("%s output: %w", cmd, err)
	}
	return v, cmd, nil
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
