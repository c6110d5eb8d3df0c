package discovery

import (
	"os"
	"path/filepath"
	"time"
)

// idEntry caches the job id of a SLUID directory for the job's life.
type idEntry struct {
	id      string
	lastTry time.Time // last environment read
	seen    time.Time
}

// resolveSLUID returns the numeric job id of the SLUID directory dir, or
// "" while no source knows it. No command runs here: the sources are the
// props file the prolog links under the SLUID, the background squeue's
// latest answer, and SLURM_JOB_ID in a job process's environment (read at
// most once per RetryAfter).
func (d *Discoverer) resolveSLUID(dir string, ino uint64, sluid string) string {
	k := entryKey{dir, ino}
	now := d.cfg.Now()
	d.mu.Lock()
	e := d.ids[k]
	if e == nil {
		e = &idEntry{}
		d.ids[k] = e
	}
	e.seen = now
	if e.id != "" {
		id := e.id
		d.mu.Unlock()
		return id
	}
	readEnv := e.lastTry.IsZero() || now.Sub(e.lastTry) >= d.cfg.RetryAfter
	if readEnv {
		e.lastTry = now
	}
	d.mu.Unlock()

	id := d.idFromProps(sluid)
	if id == "" && d.queue != nil {
		id = d.queue.idOf(sluid)
	}
	if id == "" && readEnv {
		id = d.idFromEnviron(dir, sluid)
	}
	if id != "" {
		d.mu.Lock()
		e.id = id
		d.mu.Unlock()
	}
	return id
}

// idFromProps reads the props file the prolog links under the SLUID.
func (d *Discoverer) idFromProps(sluid string) string {
	if d.cfg.PropsDir == "" {
		return ""
	}
	b, err := os.ReadFile(filepath.Join(d.cfg.PropsDir, sluid))
	if err != nil {
		return ""
	}
	return idFromVars(parseVars(b, '\n'), sluid)
}

// idFromEnviron reads SLURM_JOB_ID from the environment of a process of
// the job directory (the extern step's sleep has none: try the next).
func (d *Discoverer) idFromEnviron(dir, sluid string) string {
	for _, pid := range readProcsTree(dir, 4) {
		if id := idFromVars(d.readEnviron(pid), sluid); id != "" {
			return id
		}
	}
	return ""
}

// idFromVars is SLURM_JOB_ID where the variables belong to the job of
// sluid (a process that carries another job's SLURM_JOB_SLUID, such as a
// job step launched from elsewhere, says nothing about this one).
func idFromVars(vars map[string]string, sluid string) string {
	id := vars["SLURM_JOB_ID"]
	if !isJobID(id) {
		return ""
	}
	if s, ok := vars["SLURM_JOB_SLUID"]; ok && s != sluid {
		return ""
	}
	return id
}
