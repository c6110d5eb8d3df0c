package discovery

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Config is what discovery needs to know about the node.
type Config struct {
	Layout   Layout
	ProcFS   string // usually /proc
	PropsDir string // prolog-written job-props directory; "" to skip
	// Scontrol returns `scontrol show job` fields of a job; nil disables the
	// fallback. Its results are cached per job.
	Scontrol func(ctx context.Context, jobID string) (map[string]string, error)
	// LookupUser resolves a uid to a user name; nil uses the system's.
	LookupUser func(uid int) (string, error)
	// RetryAfter bounds how often incomplete metadata is looked up again.
	RetryAfter time.Duration
	// Now is the clock (tests set it).
	Now func() time.Time
	// StartTime gives a job's start time (unix seconds) from its cgroup
	// directory when Slurm did not give one; it makes the job key. Tests fix it.
	StartTime func(dir string) int64
	// ProcOwner gives the uid owning a /proc/<pid> directory (v2 paths carry
	// no uid); tests fix it, since a fixture's owner is whoever checked it out.
	ProcOwner func(procDir string) (uid int, ok bool)
}

// Problem is reported for input that is wrong in a way an admin should see.
type Problem func(cause string, err error)

// Discoverer finds the jobs of this node. It keeps caches across scrapes
// (metadata, user names), dropping entries of jobs that are gone.
type Discoverer struct {
	cfg   Config
	users *userCache

	mu    sync.Mutex
	metas map[string]*metaEntry // by job id + directory
}

type metaEntry struct {
	meta    Meta
	lastTry time.Time
	tries   int // scontrol runs so far
}

// New builds a Discoverer.
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
	if cfg.StartTime == nil {
		cfg.StartTime = dirCtime
	}
	if cfg.ProcOwner == nil {
		cfg.ProcOwner = statOwner
	}
	return &Discoverer{cfg: cfg, users: newUserCache(cfg.LookupUser), metas: map[string]*metaEntry{}}
}

// Layout returns the cgroup layout discovery works on.
func (d *Discoverer) Layout() Layout { return d.cfg.Layout }

// Discover lists the jobs present now, sorted by id, with metadata.
func (d *Discoverer) Discover(ctx context.Context, problem Problem) []*Job {
	jobs := map[string]*Job{}
	var order []string
	add := func(j *Job) {
		if _, dup := jobs[j.ID]; dup {
			return
		}
		jobs[j.ID] = j
		order = append(order, j.ID)
	}
	if d.cfg.Layout.V2 != "" {
		for _, j := range d.findV2(problem) {
			add(j)
		}
	}
	for _, j := range d.findV1(problem) {
		add(j)
	}
	sort.Slice(order, func(a, b int) bool { return lessJobID(order[a], order[b]) })
	out := make([]*Job, 0, len(order))
	for _, id := range order {
		out = append(out, jobs[id])
	}
	d.attachMeta(ctx, out, problem)
	return out
}

// findV2 reads system.slice/slurmstepd.scope and <node>_slurmstepd.scope.
func (d *Discoverer) findV2(problem Problem) []*Job {
	slice := filepath.Join(d.cfg.Layout.V2, "system.slice")
	entries, err := os.ReadDir(slice)
	if err != nil {
		return nil
	}
	var jobs []*Job
	for _, e := range entries {
		name := e.Name()
		if !e.IsDir() || (name != "slurmstepd.scope" && !strings.HasSuffix(name, "_slurmstepd.scope")) {
			continue
		}
		scope := filepath.Join(slice, name)
		jdirs, err := os.ReadDir(scope)
		if err != nil {
			continue
		}
		for _, je := range jdirs {
			if !je.IsDir() || !strings.HasPrefix(je.Name(), "job_") {
				continue
			}
			dir := filepath.Join(scope, je.Name())
			id := strings.TrimPrefix(je.Name(), "job_")
			if !isJobID(id) {
				// Slurm 26.05 may name the directory by SLUID: ask a process.
				resolved := d.jobIDFromProcs(dir)
				if resolved == "" {
					problem("unexpected_cgroup_dir", &DirError{Path: dir, Why: "job directory without a numeric job id or a job process to resolve it"})
					continue
				}
				id = resolved
			}
			jobs = append(jobs, &Job{ID: id, Version: 2, Dir: dir, Meta: Meta{UID: -1}})
		}
	}
	return jobs
}

// findV1 reads <controller>/slurm[_<node>]/uid_<uid>/job_<id> in every v1
// controller, joining the directories of one job.
func (d *Discoverer) findV1(problem Problem) []*Job {
	byID := map[string]*Job{}
	var order []*Job
	for _, ctrl := range v1Controllers {
		mnt := d.cfg.Layout.V1[ctrl]
		if mnt == "" {
			continue
		}
		tops, err := os.ReadDir(mnt)
		if err != nil {
			continue
		}
		for _, top := range tops {
			if !top.IsDir() || (top.Name() != "slurm" && !strings.HasPrefix(top.Name(), "slurm_")) {
				continue
			}
			topDir := filepath.Join(mnt, top.Name())
			uids, err := os.ReadDir(topDir)
			if err != nil {
				continue
			}
			for _, u := range uids {
				if !u.IsDir() || !strings.HasPrefix(u.Name(), "uid_") {
					continue
				}
				uid, err := strconv.Atoi(strings.TrimPrefix(u.Name(), "uid_"))
				if err != nil {
					problem("unexpected_cgroup_dir", &DirError{Path: filepath.Join(topDir, u.Name()), Why: "uid directory without a numeric uid"})
					continue
				}
				jdirs, err := os.ReadDir(filepath.Join(topDir, u.Name()))
				if err != nil {
					continue
				}
				for _, je := range jdirs {
					if !je.IsDir() || !strings.HasPrefix(je.Name(), "job_") {
						continue
					}
					dir := filepath.Join(topDir, u.Name(), je.Name())
					id := strings.TrimPrefix(je.Name(), "job_")
					if !isJobID(id) {
						problem("unexpected_cgroup_dir", &DirError{Path: dir, Why: "job directory without a numeric job id"})
						continue
					}
					j := byID[id]
					if j == nil {
						j = &Job{ID: id, Version: 1, V1: map[string]string{}, Meta: Meta{UID: uid}}
						byID[id] = j
						order = append(order, j)
					}
					j.V1[ctrl] = dir
				}
			}
		}
	}
	return order
}

// jobIDFromProcs reads SLURM_JOB_ID from the environment of a process of dir.
func (d *Discoverer) jobIDFromProcs(dir string) string {
	for _, pid := range readProcsTree(dir, 4) {
		b, err := os.ReadFile(filepath.Join(d.cfg.ProcFS, strconv.Itoa(pid), "environ"))
		if err != nil {
			continue
		}
		if id := parseVars(b, 0)["SLURM_JOB_ID"]; isJobID(id) {
			return id
		}
	}
	return ""
}

// DirError describes a cgroup directory that does not look like Slurm's.
type DirError struct{ Path, Why string }

func (e *DirError) Error() string { return e.Path + ": " + e.Why }

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
