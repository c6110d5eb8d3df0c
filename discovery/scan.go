// SPDX-License-Identifier: Apache-2.0

package discovery

import (
	"context"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/jobscope/jobscope/slurmcli"
)

// Naming schemes of job directories, the values of the scheme label.
const (
	SchemeJobID   = "job_id"  // job_<id>: every Slurm on v1, v2 before 26.05, CgroupJobIdPaths=yes
	SchemeSLUID   = "sluid"   // <SLUID>: Slurm 26.05's default on v2
	SchemeUnknown = "unknown" // looks like a job (job_ prefix, or step_ directories) but is neither
)

// Schemes lists the naming schemes in a fixed order.
var Schemes = []string{SchemeJobID, SchemeSLUID, SchemeUnknown}

// Reasons a job directory is skipped, the values of the reason label.
const (
	SkipUnknownScheme = "unknown_scheme"    // a name discovery cannot read a job id from
	SkipUnresolved    = "job_id_unresolved" // a SLUID directory whose job id no source gave yet
	SkipDuplicate     = "duplicate_job"     // a second directory of a job id already found
)

// SkipReasons lists the skip reasons in a fixed order.
var SkipReasons = []string{SkipUnknownScheme, SkipUnresolved, SkipDuplicate}

// skipHints say what an admin can do about each reason; they go into the
// one log line per reason.
var skipHints = map[string]string{
	SkipUnknownScheme: "this Slurm names job cgroups in a way jobscope does not know: its jobs are not exported; please report the layout",
	SkipUnresolved:    "a Slurm 26.05 SLUID directory: the job id comes from the prolog's props file, SLURM_JOB_ID in a job process's environment (needs CAP_SYS_PTRACE) or the background squeue; none has answered yet",
	SkipDuplicate:     "two cgroup directories name the same job id (multiple slurmd on one host?): only the first is exported",
}

// ScanStats is what one discovery pass saw.
type ScanStats struct {
	// Scopes are the Slurm cgroup directories that hold job directories
	// (<node>_slurmstepd.scope on v2, slurm_<node>/uid_N parents on v1).
	Scopes []string
	// Dirs counts job-shaped directories by naming scheme.
	Dirs map[string]int
	// Skipped counts the directories of this pass that were not exported
	// as a job, by reason.
	Skipped map[string]int
	// Held counts the jobs of this pass not exported yet: new jobs whose
	// identity squeue is about to give (Discoverer.held).
	Held int
}

func newScanStats() ScanStats {
	return ScanStats{Dirs: map[string]int{}, Skipped: map[string]int{}}
}

// scan is one discovery pass over cgroupfs.
type scan struct {
	d     *Discoverer
	stats ScanStats
	ctx   context.Context
	jobs  []*Job
	ids   map[string]int // job id -> index in jobs
	// unresolved are the nodes (scope prefixes) of SLUID directories still
	// without a job id this pass.
	unresolved map[string]bool
	// survey passes log what they skip but do not count it: the counter
	// counts scrapes.
	survey bool
}

func (d *Discoverer) newScan(ctx context.Context) *scan {
	return &scan{d: d, ctx: ctx, stats: newScanStats(), ids: map[string]int{}, unresolved: map[string]bool{}}
}

func (s *scan) skip(reason, path string) {
	s.stats.Skipped[reason]++
	s.d.skips.report(reason, path, !s.survey)
}

// add keeps a job unless its id was found already. A job id that only a
// job process's environment gave never takes the place of one a directory
// name, props file or squeue gave: the later directory of such a pair
// replaces the environment's.
func (s *scan) add(j *Job, path string) {
	if i, dup := s.ids[j.ID]; dup {
		if old := s.jobs[i]; old.idFromEnv && !j.idFromEnv {
			s.jobs[i] = j
			path = old.firstDir()
		}
		s.skip(SkipDuplicate, path)
		return
	}
	s.ids[j.ID] = len(s.jobs)
	s.jobs = append(s.jobs, j)
}

// classify reads a directory name: its scheme and the job id or SLUID in
// it. scheme is "" for a name that is no job's by itself; such a directory
// is a job of an unknown scheme only when it holds step directories.
func classify(name string) (scheme, id, sluid string) {
	rest, prefixed := strings.CutPrefix(name, "job_")
	switch {
	case prefixed && isJobID(rest):
		return SchemeJobID, rest, ""
	case slurmcli.IsSLUID(rest):
		return SchemeSLUID, "", rest
	case prefixed:
		return SchemeUnknown, "", ""
	}
	return "", "", ""
}

// findV2 reads system.slice/slurmstepd.scope and <node>_slurmstepd.scope.
func (s *scan) findV2() {
	slice := filepath.Join(s.d.cfg.Layout.V2, "system.slice")
	scopes, _ := listDirs(slice)
	for _, sc := range scopes {
		node, isScope := strings.CutSuffix(sc.name, "slurmstepd.scope")
		if !isScope || node != "" && !strings.HasSuffix(node, "_") {
			continue
		}
		node = strings.TrimSuffix(node, "_")
		scopeDir := filepath.Join(slice, sc.name)
		s.stats.Scopes = append(s.stats.Scopes, scopeDir)
		ents, _ := listDirs(scopeDir)
		for _, e := range ents {
			// system/ holds the slurmstepd daemons themselves.
			if e.name != "system" {
				s.jobDir(filepath.Join(scopeDir, e.name), e, node, 2, -1, "")
			}
		}
	}
}

// jobDir classifies one candidate job directory and, where it is a job,
// adds it. node is the Slurm node name of its scope's prefix ("" without
// one); v1 passes the controller and the uid from the path.
func (s *scan) jobDir(dir string, e dirent, node string, version, uid int, v1ctrl string) *Job {
	scheme, id, sluid := classify(e.name)
	if scheme == "" {
		if !hasStepDir(dir) {
			s.d.skips.ignored(dir)
			return nil
		}
		scheme = SchemeUnknown
	}
	s.stats.Dirs[scheme]++
	if scheme == SchemeUnknown {
		s.skip(SkipUnknownScheme, dir)
		return nil
	}
	fromEnv := false
	if scheme == SchemeSLUID {
		if id, fromEnv = s.d.resolveSLUID(s.ctx, dir, e.ino, sluid); id == "" {
			s.unresolved[node] = true
			s.skip(SkipUnresolved, dir)
			return nil
		}
		if fromEnv {
			// Still a hint: squeue is asked for SLUIDs until it confirms it.
			s.unresolved[node] = true
		}
	}
	j := &Job{ID: id, SLUID: sluid, Version: version, node: node, ino: e.ino, Meta: Meta{UID: uid}, idFromEnv: fromEnv}
	if version == 2 {
		j.Dir = dir
	} else {
		j.V1 = map[string]string{v1ctrl: dir}
	}
	s.add(j, dir)
	return j
}

func hasStepDir(dir string) bool {
	for _, n := range subdirs(dir) {
		if strings.HasPrefix(n, "step_") {
			return true
		}
	}
	return false
}

// findV1 reads <controller>/slurm[_<node>]/uid_<uid>/<job dir> in every v1
// controller, joining the directories of one job. A job's directory is
// counted once, in the first controller that has it.
func (s *scan) findV1() {
	byDir := map[string]*Job{} // slurm[_node]/uid_N/<name> -> job
	seen := map[string]bool{}
	for _, ctrl := range v1Controllers {
		mnt := s.d.cfg.Layout.V1[ctrl]
		if mnt == "" {
			continue
		}
		tops, _ := listDirs(mnt)
		for _, top := range tops {
			if top.name != "slurm" && !strings.HasPrefix(top.name, "slurm_") {
				continue
			}
			node := strings.TrimPrefix(top.name, "slurm")
			node = strings.TrimPrefix(node, "_")
			topDir := filepath.Join(mnt, top.name)
			uids, _ := listDirs(topDir)
			for _, u := range uids {
				rel := top.name + "/" + u.name
				uid, err := strconv.Atoi(strings.TrimPrefix(u.name, "uid_"))
				if !strings.HasPrefix(u.name, "uid_") || err != nil || uid < 0 {
					if !seen[rel] {
						seen[rel] = true
						s.stats.Dirs[SchemeUnknown]++
						s.skip(SkipUnknownScheme, filepath.Join(topDir, u.name))
					}
					continue
				}
				if !seen[top.name] {
					seen[top.name] = true
					s.stats.Scopes = append(s.stats.Scopes, topDir)
				}
				uidDir := filepath.Join(topDir, u.name)
				jdirs, _ := listDirs(uidDir)
				for _, je := range jdirs {
					key := rel + "/" + je.name
					dir := filepath.Join(uidDir, je.name)
					if j := byDir[key]; j != nil {
						j.V1[ctrl] = dir
						continue
					}
					if seen[key] {
						continue // skipped in an earlier controller
					}
					seen[key] = true
					if j := s.jobDir(dir, je, node, 1, uid, ctrl); j != nil {
						byDir[key] = j
					}
				}
			}
		}
	}
}
