package discovery

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// metaEntry is one job's metadata, per source, cached for the job's life.
// Sources are merged field by field in order of trust: the prolog's props
// file, a job process's environment, the background squeue. The props
// file can lack fields (Slurm 24.11's prolog has no SLURM_JOB_NAME,
// SLURM_JOB_QOS or SLURM_ARRAY_*), so a job is done only once its
// environment or squeue, which have them all, has answered, and the job
// key is known (where the environment has no SLURM_JOB_START_TIME,
// squeue gives the start time).
type metaEntry struct {
	mu sync.Mutex // held by the scrape reading this job's sources

	props, environ, squeue Meta
	haveProps, haveEnviron bool
	haveSqueue             bool
	final                  bool // nothing more to learn
	lastTry                time.Time
	owner                  int // uid owning a job process; -1 unknown

	merged atomic.Pointer[Meta] // what scrapes export
	seen   atomic.Int64         // unix nanoseconds of the last scrape that saw the job
}

// attachMeta gives each job its metadata and adds to waiting the nodes
// (scope prefixes) of the jobs that wait for the background squeue. A
// scrape never waits for another scrape reading the same job's sources (a
// process's environ can block), nor reads sources past its deadline: it
// exports what is known.
func (d *Discoverer) attachMeta(ctx context.Context, jobs []*Job, problem Problem, waiting map[string]bool) {
	now := d.cfg.Now()
	entries := make([]*metaEntry, len(jobs))
	d.mu.Lock()
	for i, j := range jobs {
		k := entryKey{j.firstDir(), j.ino}
		e := d.metas[k]
		if e == nil {
			e = &metaEntry{owner: -1}
			e.merged.Store(&Meta{UID: j.Meta.UID, SLUID: j.SLUID, Source: SourceNone})
			d.metas[k] = e
		}
		e.seen.Store(now.UnixNano())
		entries[i] = e
	}
	d.sweep(now)
	d.mu.Unlock()

	for i, j := range jobs {
		e := entries[i]
		if ctx.Err() == nil && e.mu.TryLock() {
			d.refresh(j, e, now, problem)
			if !e.final {
				waiting[j.node] = true
			}
			e.mu.Unlock()
		}
		j.Meta = *e.merged.Load()
	}
}

// sweep drops the entries of jobs no scrape has seen for sweepAfter.
func (d *Discoverer) sweep(now time.Time) {
	cut := now.Add(-sweepAfter)
	for k, e := range d.metas {
		if e.seen.Load() < cut.UnixNano() {
			delete(d.metas, k)
		}
	}
	for k, e := range d.ids {
		if e.seen.Before(cut) {
			delete(d.ids, k)
		}
	}
}

// refresh reads the sources that are due and stores the merged metadata.
// The squeue answer is a map lookup, so it is checked every scrape; files
// are read at most once per RetryAfter.
func (d *Discoverer) refresh(j *Job, e *metaEntry, now time.Time, problem Problem) {
	if e.final {
		return
	}
	due := e.lastTry.IsZero() || now.Sub(e.lastTry) >= d.cfg.RetryAfter
	if due {
		e.lastTry = now
		if !e.haveProps && d.cfg.PropsDir != "" {
			b, err := os.ReadFile(filepath.Join(d.cfg.PropsDir, j.ID))
			switch {
			case err == nil:
				e.props, e.haveProps = metaFromVars(parseVars(b, '\n')), true
			case !errors.Is(err, os.ErrNotExist):
				problem("props_unreadable", err)
			}
		}
		if !e.haveEnviron {
			if vars := d.environOf(j); vars != nil {
				e.environ, e.haveEnviron = metaFromVars(vars), true
			}
		}
	}
	if !e.haveSqueue && d.queue != nil {
		if nj, ok := d.queue.lookup(j.ID); ok && (j.SLUID == "" || nj.SLUID == "" || nj.SLUID == j.SLUID) {
			e.squeue, e.haveSqueue = metaFromNodeJob(nj), true
		}
	}
	m := Meta{UID: j.Meta.UID, SLUID: j.SLUID}
	if e.haveProps {
		m.mergeFrom(e.props, SourceProps)
	}
	if e.haveEnviron {
		m.mergeFrom(e.environ, SourceEnviron)
	}
	if e.haveSqueue {
		m.mergeFrom(e.squeue, SourceSqueue)
	}
	if m.Source == "" {
		m.Source = SourceNone
	}
	if m.UID < 0 {
		if due {
			e.owner = d.ownerOf(j)
		}
		m.UID = e.owner
	}
	if m.UID >= 0 && m.User == "" {
		name, err := d.users.name(m.UID)
		if err != nil {
			problem("unknown_uid", fmt.Errorf("uid %d: %w", m.UID, err))
		}
		m.User = name
	}
	m.Key = m.key(j.ID)
	e.final = e.haveSqueue || e.haveEnviron && (m.Key != "" || d.queue == nil)
	e.merged.Store(&m)
}

// environOf reads the Slurm variables of the first job process that has
// SLURM_JOB_ID set to this job (the extern step's sleep has none).
func (d *Discoverer) environOf(j *Job) map[string]string {
	for _, pid := range j.PIDs() {
		if vars := d.readEnviron(pid); vars != nil && vars["SLURM_JOB_ID"] == j.ID {
			return vars
		}
	}
	return nil
}

// ownerOf returns the uid owning the job's first non-root process (v2
// paths carry no uid), or -1.
func (d *Discoverer) ownerOf(j *Job) int {
	for _, pid := range j.PIDs() {
		if uid, ok := d.cfg.ProcOwner(filepath.Join(d.cfg.ProcFS, strconv.Itoa(pid))); ok && uid != 0 {
			return uid
		}
	}
	return -1
}

func statOwner(dir string) (int, bool) {
	fi, err := os.Stat(dir)
	if err != nil {
		return 0, false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return int(st.Uid), true
}

func (j *Job) firstDir() string {
	if j.Version == 2 {
		return j.Dir
	}
	for _, c := range v1Controllers {
		if d := j.V1[c]; d != "" {
			return d
		}
	}
	return ""
}
