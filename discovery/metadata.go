// SPDX-License-Identifier: Apache-2.0

package discovery

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/jobscope/jobscope/internal/boundedread"
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
	owner                  int       // uid owning a job process; -1 unknown
	first                  time.Time // when a scrape first saw the job

	merged atomic.Pointer[Meta] // what scrapes export
	seen   atomic.Int64         // unix nanoseconds of the last scrape that saw the job
}

// attachMeta gives each job its metadata and adds to waiting the nodes
// (scope prefixes) of the jobs that wait for the background squeue. A
// scrape never waits for another scrape reading the same job's sources (a
// process's environ can block), nor reads sources past its deadline: it
// exports what is known.
func (d *Discoverer) attachMeta(ctx context.Context, jobs []*Job, problem Problem, waiting map[string]bool, held *int) []*Job {
	now := d.cfg.Now()
	entries := make([]*metaEntry, len(jobs))
	d.mu.Lock()
	for i, j := range jobs {
		k := entryKey{j.firstDir(), j.ino}
		e := d.metas[k]
		if e == nil {
			e = &metaEntry{owner: -1, first: now}
			e.merged.Store(&Meta{UID: j.Meta.UID, SLUID: j.SLUID, Source: SourceNone})
			d.metas[k] = e
		}
		e.seen.Store(now.UnixNano())
		entries[i] = e
	}
	d.sweep(now)
	d.mu.Unlock()

	kept := jobs[:0]
	for i, j := range jobs {
		e := entries[i]
		if ctx.Err() == nil && e.mu.TryLock() {
			d.refresh(ctx, j, e, now, problem)
			if !e.final {
				waiting[j.node] = true
			}
			e.mu.Unlock()
		}
		j.Meta = *e.merged.Load()
		if d.held(j, now, entries[i]) {
			*held++
			continue
		}
		kept = append(kept, j)
	}
	return kept
}

// held says whether a job's series wait for its identity: the labels
// user and account are constant for a job's life, and only the props file
// and squeue know the account. While squeue answers, a new job that the
// props file does not describe is not exported until the first answer from
// a run that started after the job appeared (within one QueueInterval and a
// scrape, as runs go), nor longer than holdFor. Its counters lose nothing:
// they are cumulative. While squeue fails, before its first answer and
// without it, jobs are exported at once with what the node knows (an
// account appears when squeue answers).
func (d *Discoverer) held(j *Job, now time.Time, e *metaEntry) bool {
	m := j.Meta
	if d.queue == nil || strings.Contains(m.Source, SourceProps) || strings.Contains(m.Source, SourceSqueue) {
		return false
	}
	return d.queue.due(e.first) && now.Sub(e.first) < d.holdFor()
}

// holdFor bounds how long a job waits for squeue: the run due within one
// interval starts at the next scrape after it, and takes up to the timeout.
func (d *Discoverer) holdFor() time.Duration {
	return 2*d.cfg.QueueInterval + d.cfg.QueueTimeout
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
//
// Identity (uid, user, account) follows the order of trust in
// docs/security.md: the props file and squeue are authoritative, the
// kernel gives the uid and so the user, and the environment, which the
// job's user writes, is a hint. It never sets the uid, and where squeue
// runs it never sets the user or account either: only the other fields
// (partition, QOS, name, ...) until squeue answers, and a SLUID
// directory's job id (resolveSLUID). Without squeue it sets the user and
// account only while the props file has not answered, and only when its
// user is the name of the uid the job's processes run as. A job whose
// metadata came from it stays waiting for squeue (its entry is not final).
func (d *Discoverer) refresh(ctx context.Context, j *Job, e *metaEntry, now time.Time, problem Problem) {
	if e.final {
		return
	}
	due := e.lastTry.IsZero() || now.Sub(e.lastTry) >= d.cfg.RetryAfter
	if due {
		e.lastTry = now
		if !e.haveProps && d.cfg.PropsDir != "" {
			if vars := d.propsOf(j, problem); vars != nil {
				e.props, e.haveProps = metaFromVars(vars), true
			}
		}
	}
	// A young job's environment is tried at every scrape: its task may not
	// have exec'd yet, or the read ran past its wait on a busy node. Once
	// per RetryAfter would export its first scrapes without the name the
	// environment gives, then with it: one job under two label sets.
	if !e.haveEnviron && (due || now.Sub(e.first) < youngEnviron) {
		if vars := d.environOf(ctx, j, problem); vars != nil {
			e.environ, e.haveEnviron = metaFromVars(vars), true
		}
	}
	if !e.haveSqueue && d.queue != nil {
		// A job id that came from the environment is confirmed only by a
		// record that carries the directory's SLUID.
		if nj, ok := d.queue.lookup(j.ID); ok && (j.SLUID == "" || nj.SLUID == j.SLUID || nj.SLUID == "" && !j.idFromEnv) {
			e.squeue, e.haveSqueue = metaFromNodeJob(nj), true
		}
	}
	m := Meta{UID: j.Meta.UID, SLUID: j.SLUID}
	var gave [3]bool // props, environ, squeue: the order of Meta.Source
	if e.haveProps {
		gave[0] = m.mergeFrom(e.props)
	}
	if e.haveSqueue {
		gave[2] = m.mergeFrom(e.squeue)
	}
	if m.UID < 0 {
		if due {
			e.owner = d.ownerOf(j)
		}
		m.UID = e.owner
	}
	if e.haveEnviron && !e.haveSqueue {
		env := e.environ
		env.UID = -1 // the kernel's, never the environment's
		agrees := !e.haveProps && d.envUserAgrees(env.User, m.UID, problem)
		if d.queue != nil || !agrees {
			// Where squeue runs, the account waits for it (or the props
			// file): nothing on the node can check the environment's, and
			// taking it until squeue answers would label one job two ways.
			// Without squeue the environment's is the only account there
			// is, and only with a user that is the owner's name.
			env.User, env.Account = "", ""
		}
		gave[1] = m.mergeFrom(env) || j.idFromEnv
	}
	var srcs []string
	for i, s := range []string{SourceProps, SourceEnviron, SourceSqueue} {
		if gave[i] {
			srcs = append(srcs, s)
		}
	}
	m.Source = strings.Join(srcs, "+")
	if m.Source == "" {
		m.Source = SourceNone
	}
	if m.UID >= 0 && m.User == "" {
		name, err := d.users.name(m.UID)
		if err != nil {
			problem("unknown_uid", fmt.Errorf("uid %d: %w", m.UID, err))
		}
		m.User = name
	}
	m.Key = m.key(j.ID)
	switch {
	case e.haveSqueue:
		e.final = true
	case d.queue != nil:
		// The props file gave the identity; the environment only what a
		// Slurm 24.11 prolog leaves out (name, QOS, array ids).
		e.final = e.haveProps && e.haveEnviron && m.Key != "" && !j.idFromEnv
	default:
		e.final = e.haveEnviron
	}
	e.merged.Store(&m)
}

// envUserAgrees says whether the environment's user could stand: it is
// the name (NSS) of uid, the owner of the job's processes. One that is not
// is a forged or foreign environment, logged once and counted. Without a
// uid (every process of the job is root's, which only root can arrange)
// there is nothing it could disagree with.
func (d *Discoverer) envUserAgrees(user string, uid int, problem Problem) bool {
	if user == "" {
		return false
	}
	if uid < 0 {
		return true
	}
	if name, err := d.users.name(uid); err == nil && name == user {
		return true
	}
	problem("environ_user_mismatch", fmt.Errorf("SLURM_JOB_USER %q in a job process's environment is not the name of uid %d, which runs the job's processes", user, uid))
	return false
}

// propsOf reads the job's props file: for a SLUID directory the one the
// prolog links under the SLUID, then the one under the job id unless that
// id came from the environment (it would read another job's file); a file
// whose SLURM_JOB_SLUID is another job's is not this job's. nil when there
// is none or it cannot be read (reported).
func (d *Discoverer) propsOf(j *Job, problem Problem) map[string]string {
	names := []string{j.ID}
	if j.SLUID != "" {
		names = []string{j.SLUID}
		if !j.idFromEnv {
			names = append(names, j.ID)
		}
	}
	for _, name := range names {
		b, err := readProps(filepath.Join(d.cfg.PropsDir, name))
		switch {
		case err == nil:
			vars := parseVars(b, '\n')
			if s, ok := vars["SLURM_JOB_SLUID"]; ok && j.SLUID != "" && s != j.SLUID {
				continue
			}
			return vars
		case errors.Is(err, errTooLarge) || errors.Is(err, errNotRegular):
			problem("read_failed", err)
			return nil
		case !errors.Is(err, os.ErrNotExist):
			problem("props_unreadable", err)
			return nil
		}
	}
	return nil
}

// environOf reads the Slurm variables of the first job process whose
// environment names this job: SLURM_JOB_ID its id and, where the directory
// is named by a SLUID, SLURM_JOB_SLUID that SLUID (the directory's name is
// the authority; the extern step's sleep has neither). A cgroup.procs that
// could not be read is reported.
func (d *Discoverer) environOf(ctx context.Context, j *Job, problem Problem) map[string]string {
	pids := j.PIDs()
	if err := j.pidsError(); err != nil {
		problem("read_failed", err)
	}
	for _, pid := range pids {
		if ctx.Err() != nil {
			return nil
		}
		vars := d.readEnviron(ctx, pid)
		if vars != nil && vars["SLURM_JOB_ID"] == j.ID && (j.SLUID == "" || vars["SLURM_JOB_SLUID"] == j.SLUID) {
			return vars
		}
	}
	return nil
}

// ownerOf returns the uid of the job's oldest non-root process (v2 paths
// carry no uid), or -1. The oldest by the kernel's start time is the first
// process slurmstepd started as the job's user (the batch script, the
// extern step's sleep or a task): everything the user runs later, a
// rootless container's processes under a /etc/subuid uid included, starts
// after it, and pids, which wrap, cannot tell that order. A process whose
// start time cannot be read comes after those whose can.
func (d *Discoverer) ownerOf(j *Job) int {
	pids := slices.Clone(j.PIDs())
	starts := make(map[int]uint64, len(pids))
	for _, pid := range pids {
		st, ok := d.cfg.ProcStart(filepath.Join(d.cfg.ProcFS, strconv.Itoa(pid)))
		if !ok {
			st = math.MaxUint64
		}
		starts[pid] = st
	}
	slices.SortStableFunc(pids, func(a, b int) int { return cmp.Compare(starts[a], starts[b]) })
	for _, pid := range pids {
		if uid, ok := d.cfg.ProcOwner(filepath.Join(d.cfg.ProcFS, strconv.Itoa(pid))); ok && uid != 0 {
			return uid
		}
	}
	return -1
}

// statStart is a process's start time (clock ticks after boot, field 22
// of procDir/stat), read without blocking or following a symlink.
func statStart(procDir string) (uint64, bool) {
	b, ok := readProcHead(procDir + "/stat")
	if !ok {
		return 0, false
	}
	return parseStatStart(b)
}

// readProcHead reads the first 4 KiB of a procfs file, where the fields
// discovery wants are, without blocking or following a symlink.
func readProcHead(path string) ([]byte, bool) {
	fd, err := openRegular(unix.AT_FDCWD, path, false)
	if err != nil {
		return nil, false
	}
	defer unix.Close(fd)
	b, _, err := boundedread.Fd(fd, 4<<10)
	return b, err == nil
}

// parseStatStart reads field 22 of a stat line. The command name (field 2)
// is the process's to choose and may hold spaces and parentheses: fields
// are counted after its last ')'.
func parseStatStart(b []byte) (uint64, bool) {
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(s[i+1:]) // fields 3 onwards
	if len(f) < 20 {
		return 0, false
	}
	v, err := strconv.ParseUint(f[19], 10, 64)
	return v, err == nil
}

// statusUID is the real uid in procDir/status: the user who runs the
// process, whatever a setuid program made its effective uid (which is the
// owner of the /proc/<pid> directory). The file is read without blocking or
// following a symlink, and only its first 4 KiB, where Uid: is.
func statusUID(procDir string) (int, bool) {
	b, ok := readProcHead(procDir + "/status")
	if !ok {
		return 0, false
	}
	return parseStatusUID(b)
}

// parseStatusUID reads the real uid from a status file's "Uid:" line.
func parseStatusUID(b []byte) (int, bool) {
	for line := range strings.Lines(string(b)) {
		rest, ok := strings.CutPrefix(line, "Uid:")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			return 0, false
		}
		uid, err := strconv.ParseUint(f[0], 10, 32)
		if err != nil {
			return 0, false
		}
		return int(uid), true
	}
	return 0, false
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
