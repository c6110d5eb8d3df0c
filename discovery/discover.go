// SPDX-License-Identifier: Apache-2.0

package discovery

import (
	"context"
	"log/slog"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jobscope/jobscope/slurmcli"
)

// Config is what discovery needs to know about the node.
type Config struct {
	Layout   Layout
	ProcFS   string // usually /proc
	PropsDir string // prolog-written job-props directory; "" to skip
	// Queue lists this node's jobs as slurmctld knows them (one batched
	// squeue for all jobs). It runs in the background, never inside
	// Discover; nil disables it.
	Queue func(ctx context.Context, req QueueRequest) ([]slurmcli.NodeJob, error)
	// QueueInterval is the least time between two Queue runs (default
	// 30s); after failures the wait doubles up to QueueMaxBackoff (default
	// 10m). QueueTimeout bounds one run (default 10s).
	QueueInterval, QueueTimeout, QueueMaxBackoff time.Duration
	// NodeNames are the Slurm names of this node, for Queue. Empty: the
	// names in the <node>_slurmstepd.scope and slurm_<node> directories,
	// else Hostname.
	NodeNames []string
	Hostname  string
	// Logger gets the lines discovery logs itself: once per skip reason,
	// once per squeue outage. nil discards them.
	Logger *slog.Logger
	// LookupUser resolves a uid to a user name; nil uses the system's.
	LookupUser func(uid int) (string, error)
	// RetryAfter bounds how often a job's props file and environment are
	// read again while its metadata is incomplete.
	RetryAfter time.Duration
	// Now is the clock (tests set it).
	Now func() time.Time
	// ProcOwner gives the uid a process runs as (v2 paths carry no uid):
	// the real uid of /proc/<pid>/status, which a setuid program does not
	// change; tests fix it, since a fixture's owner is whoever checked it out.
	ProcOwner func(procDir string) (uid int, ok bool)
	// ProcStart gives when a process started (clock ticks after boot, from
	// /proc/<pid>/stat): the job's owner is its oldest non-root process.
	ProcStart func(procDir string) (ticks uint64, ok bool)
}

// Problem is reported for input that is wrong in a way an admin should see.
type Problem func(cause string, err error)

// Discoverer finds the jobs of this node. It keeps caches across scrapes
// (metadata, SLUID job ids, user names), dropping entries of jobs that are
// gone.
type Discoverer struct {
	cfg   Config
	log   *slog.Logger
	users *userCache
	queue *queue // nil without cfg.Queue
	skips *skipLog
	// environ bounds reads of job processes' environments (environ.go).
	environ *environReader

	// envIDRefused logs, once, the first SLUID directory whose job id
	// squeue could not confirm.
	envIDRefused sync.Once

	mu    sync.Mutex
	metas map[entryKey]*metaEntry
	ids   map[entryKey]*idEntry
	last  ScanStats
}

// entryKey names one job directory for the job's life: a job id reused
// later gets a new directory, and so a new inode.
type entryKey struct {
	path string
	ino  uint64
}

// sweepAfter is how long a cache entry outlives the last scrape that saw
// its job. Overlapping scrapes may see different sets of jobs: an entry is
// dropped only when no scrape has seen it for a while.
const sweepAfter = time.Minute

// youngEnviron is how long a new job's environment is tried at every
// scrape before falling back to once per RetryAfter (refresh).
const youngEnviron = time.Minute

// New builds a Discoverer. Close stops its background squeue.
func New(cfg Config) *Discoverer {
	if cfg.ProcFS == "" {
		cfg.ProcFS = "/proc"
	}
	if cfg.RetryAfter == 0 {
		cfg.RetryAfter = 30 * time.Second
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.ProcOwner == nil {
		cfg.ProcOwner = statusUID
	}
	if cfg.ProcStart == nil {
		cfg.ProcStart = statStart
	}
	if cfg.QueueInterval <= 0 {
		cfg.QueueInterval = 30 * time.Second
	}
	if cfg.QueueTimeout <= 0 {
		cfg.QueueTimeout = 10 * time.Second
	}
	if cfg.QueueMaxBackoff < cfg.QueueInterval {
		cfg.QueueMaxBackoff = max(10*time.Minute, cfg.QueueInterval)
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	d := &Discoverer{cfg: cfg, log: log, users: newUserCache(cfg.LookupUser), skips: newSkipLog(log), environ: newEnvironReader(),
		metas: map[entryKey]*metaEntry{}, ids: map[entryKey]*idEntry{}, last: newScanStats()}
	if cfg.Queue != nil {
		d.queue = newQueue(cfg, log)
	}
	return d
}

// Close stops the background squeue, killing a run in flight.
func (d *Discoverer) Close() {
	if d.queue != nil {
		d.queue.close()
	}
}

// Discover lists the jobs present now, sorted by id, with metadata.
func (d *Discoverer) Discover(ctx context.Context, problem Problem) []*Job {
	jobs, _ := d.DiscoverStats(ctx, problem)
	return jobs
}

// DiscoverStats is Discover that also says what this pass saw: the job
// directories by naming scheme and those skipped, by reason.
func (d *Discoverer) DiscoverStats(ctx context.Context, problem Problem) ([]*Job, ScanStats) {
	if problem == nil {
		problem = func(string, error) {}
	}
	s := d.newScan(ctx)
	if d.cfg.Layout.V2 != "" {
		s.findV2()
	}
	s.findV1()
	sort.Slice(s.jobs, func(a, b int) bool { return lessJobID(s.jobs[a].ID, s.jobs[b].ID) })
	waiting := map[string]bool{}
	for n := range s.unresolved {
		waiting[n] = true
	}
	s.jobs = d.attachMeta(ctx, s.jobs, problem, waiting, &s.stats.Held)
	if d.queue != nil && len(waiting) > 0 {
		d.queue.want(QueueRequest{Nodes: d.nodeNames(waiting), SLUID: len(s.unresolved) > 0})
	}
	d.mu.Lock()
	d.last = s.stats
	d.mu.Unlock()
	return s.jobs, s.stats
}

// nodeNames are the node names squeue is asked about: those of the scopes
// that hold jobs waiting for it (a stale scope of another node name, left
// by a test setup, must not make squeue refuse the whole list), the host
// name for a scope without a prefix; --slurm.node-name overrides them.
func (d *Discoverer) nodeNames(waiting map[string]bool) []string {
	if len(d.cfg.NodeNames) > 0 {
		return d.cfg.NodeNames
	}
	var names []string
	for n := range waiting {
		if n == "" {
			n = d.cfg.Hostname
		}
		if slurmcli.ValidNodeName(n) && !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return names
}

// JobIDFromCgroupPath finds the numeric job id of a ".../job_<id>/..."
// cgroup path (a line of /proc/<pid>/cgroup), or "".
func JobIDFromCgroupPath(p string) string {
	for _, el := range strings.Split(p, "/") {
		if id, ok := strings.CutPrefix(el, "job_"); ok && isJobID(id) {
			return id
		}
	}
	return ""
}

// readEnviron reads the Slurm variables of one process; nil when it cannot
// be read (exited, or not ours to read).
func (d *Discoverer) readEnviron(ctx context.Context, pid int) map[string]string {
	b := d.environ.read(ctx, filepath.Join(d.cfg.ProcFS, strconv.Itoa(pid), "environ"))
	if b == nil {
		return nil
	}
	return parseVars(b, 0)
}

func isJobID(s string) bool {
	if s == "" || len(s) > 12 {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

func lessJobID(a, b string) bool {
	if len(a) != len(b) {
		return len(a) < len(b)
	}
	return a < b
}

func parseUint(s string) (uint64, error) { return strconv.ParseUint(strings.TrimSpace(s), 10, 64) }
