// SPDX-License-Identifier: Apache-2.0

package discovery

import (
	"context"
	"path/filepath"
	"time"
)

// idEntry caches the job id of a SLUID directory for the job's life.
type idEntry struct {
	id string
	// fromEnv: id came from a job process's environment alone. It is a
	// hint: the props file and squeue are asked again (props at most once
	// per RetryAfter), and the first that answers replaces it.
	fromEnv bool
	lastTry time.Time // last read of the files
	seen    time.Time
	first   time.Time // when a scrape first met the directory
}

// resolveSLUID returns the numeric job id of the SLUID directory dir, or
// "" while no source knows it, and whether that id is only the
// environment's. No command runs here: the sources are the props file the
// prolog links under the SLUID, the background squeue's latest answer, and,
// when neither knows, SLURM_JOB_ID in the environment of a job process
// whose SLURM_JOB_SLUID is the directory's name (read at most once per
// RetryAfter).
func (d *Discoverer) resolveSLUID(ctx context.Context, dir string, ino uint64, sluid string) (string, bool) {
	k := entryKey{dir, ino}
	now := d.cfg.Now()
	d.mu.Lock()
	e := d.ids[k]
	if e == nil {
		e = &idEntry{first: now}
		d.ids[k] = e
	}
	e.seen = now
	if e.id != "" && !e.fromEnv {
		id := e.id
		d.mu.Unlock()
		return id, false
	}
	readFiles := e.lastTry.IsZero() || now.Sub(e.lastTry) >= d.cfg.RetryAfter
	if readFiles {
		e.lastTry = now
	}
	cached := e.id
	d.mu.Unlock()

	id := ""
	if d.queue != nil {
		id = d.queue.idOf(sluid)
	}
	if id == "" && readFiles {
		id = d.idFromProps(sluid)
	}
	fromEnv := false
	if id == "" {
		id, fromEnv = cached, cached != ""
		if readFiles && id == "" {
			id = d.idFromEnviron(ctx, dir, sluid)
			fromEnv = id != ""
		}
	}
	if fromEnv && d.queue != nil && d.queue.answered(e.first) {
		// squeue has answered since the directory appeared and did not
		// give this SLUID's id (its text output carries no SLUIDs, or it
		// does not list the job): the environment's id would never be
		// checked, and a forged one would last the job's life.
		d.envIDRefused.Do(func() {
			d.log.Warn("a SLUID directory's job id came only from a job process's environment and squeue, which has answered since, does not confirm it: the job is not exported (counted as job_id_unresolved). squeue's text output has no SLUIDs: use --slurm.node-metadata.format=auto or json, or the prolog's props file (logged once)",
				"path", dir)
		})
		return "", false
	}
	if id != "" {
		d.mu.Lock()
		e.id, e.fromEnv = id, fromEnv
		d.mu.Unlock()
	}
	return id, fromEnv
}

// idFromProps reads the props file the prolog links under the SLUID.
func (d *Discoverer) idFromProps(sluid string) string {
	if d.cfg.PropsDir == "" {
		return ""
	}
	b, err := readProps(filepath.Join(d.cfg.PropsDir, sluid))
	if err != nil {
		return ""
	}
	return idFromVars(parseVars(b, '\n'), sluid, false)
}

// idFromEnviron reads SLURM_JOB_ID from the environment of a process of
// the job directory (the extern step's sleep has none: try the next).
func (d *Discoverer) idFromEnviron(ctx context.Context, dir, sluid string) string {
	pids, _ := readProcsTree(dir, 4)
	for _, pid := range pids {
		if ctx.Err() != nil {
			return ""
		}
		if id := idFromVars(d.readEnviron(ctx, pid), sluid, true); id != "" {
			return id
		}
	}
	return ""
}

// idFromVars is SLURM_JOB_ID where the variables belong to the job of
// sluid. A process that carries another job's SLURM_JOB_SLUID (a job step
// launched from elsewhere) says nothing about this one, and neither does an
// environment without one (strict, for environments: the directory's name
// is the authority, and an environment that does not name it is ignored
// whole). A props file (root's) may lack the variable.
func idFromVars(vars map[string]string, sluid string, strict bool) string {
	id := vars["SLURM_JOB_ID"]
	if !isJobID(id) {
		return ""
	}
	if s, ok := vars["SLURM_JOB_SLUID"]; ok && s != sluid || !ok && strict {
		return ""
	}
	return id
}
