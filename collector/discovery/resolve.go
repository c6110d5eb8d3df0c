package discovery

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// scontrolTries bounds how often one job is looked up with scontrol, so a
// slurmctld outage never turns into a storm of scontrol runs.
const scontrolTries = 3

// attachMeta fills each job's Meta from the caches, and where a job's
// metadata is incomplete, from (in order) the props directory, a job
// process's environment and scontrol.
func (d *Discoverer) attachMeta(ctx context.Context, jobs []*Job, problem Problem) {
	d.mu.Lock()
	defer d.mu.Unlock()
	now := d.cfg.Now()
	seen := make(map[string]bool, len(jobs))
	for _, j := range jobs {
		key := j.ID + "|" + j.firstDir()
		seen[key] = true
		e := d.metas[key]
		if e == nil {
			e = &metaEntry{meta: Meta{UID: j.Meta.UID}}
			d.metas[key] = e
		}
		if !e.meta.complete() && (e.lastTry.IsZero() || now.Sub(e.lastTry) >= d.cfg.RetryAfter) {
			e.lastTry = now
			d.lookup(ctx, j, e, problem)
		}
		j.Meta = e.meta
		if j.Meta.Source == "" {
			j.Meta.Source = "none"
		}
	}
	for k := range d.metas {
		if !seen[k] {
			delete(d.metas, k)
		}
	}
}

func (d *Discoverer) lookup(ctx context.Context, j *Job, e *metaEntry, problem Problem) {
	m := &e.meta
	if d.cfg.PropsDir != "" {
		b, err := os.ReadFile(filepath.Join(d.cfg.PropsDir, j.ID))
		switch {
		case err == nil:
			m.mergeFrom(metaFromVars(parseVars(b, '\n'), "props"))
		case !errors.Is(err, os.ErrNotExist):
			problem("props_unreadable", err)
		}
	}
	if !m.complete() {
		if vars := d.environOf(j); vars != nil {
			m.mergeFrom(metaFromVars(vars, "environ"))
		}
	}
	if !m.complete() && d.cfg.Scontrol != nil && e.tries < scontrolTries {
		e.tries++
		fields, err := d.cfg.Scontrol(ctx, j.ID)
		if err != nil {
			problem("scontrol_failed", fmt.Errorf("job %s: %w", j.ID, err))
		} else {
			m.mergeFrom(metaFromScontrol(fields))
		}
	}
	if m.UID < 0 {
		m.UID = d.ownerOf(j)
	}
	if m.UID >= 0 && m.User == "" {
		name, err := d.users.name(m.UID)
		if err != nil {
			problem("unknown_uid", fmt.Errorf("uid %d: %w", m.UID, err))
		}
		m.User = name
	}
	if m.Key == "" {
		m.Key = m.Cluster + "/" + j.ID + "/" + strconv.FormatInt(d.cfg.StartTime(j.firstDir()), 10)
	}
}

// environOf reads the Slurm variables of the first job process that has
// SLURM_JOB_ID set to this job (the extern step's sleep has none).
func (d *Discoverer) environOf(j *Job) map[string]string {
	for _, pid := range j.PIDs() {
		b, err := os.ReadFile(filepath.Join(d.cfg.ProcFS, strconv.Itoa(pid), "environ"))
		if err != nil {
			continue // exited, or not ours to read: try the next one
		}
		vars := parseVars(b, 0)
		if vars["SLURM_JOB_ID"] == j.ID {
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

// metaFromScontrol maps `scontrol show job -o` fields.
func metaFromScontrol(f map[string]string) Meta {
	m := Meta{UID: -1, Source: "scontrol"}
	// UserId=alice(1001)
	if u := f["UserId"]; u != "" {
		name, rest, _ := strings.Cut(u, "(")
		m.User = name
		if uid, err := strconv.Atoi(strings.TrimSuffix(rest, ")")); err == nil {
			m.UID = uid
		}
	}
	m.Account = f["Account"]
	m.Partition = f["Partition"]
	m.QOS = f["QOS"]
	m.Name = f["JobName"]
	if v := f["ArrayJobId"]; v != "" {
		m.ArrayJobID = v
		m.ArrayTaskID = f["ArrayTaskId"]
	}
	if v := f["ClusterName"]; v != "" {
		m.Cluster = v
	}
	return m
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

func dirCtime(dir string) int64 {
	fi, err := os.Stat(dir)
	if err != nil {
		return 0
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Ctim.Sec
	}
	return fi.ModTime().Unix()
}
