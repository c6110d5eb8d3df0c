// SPDX-License-Identifier: Apache-2.0

package gpu

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// Method says how a GPU was found to belong to a job, in the order the
// methods are trusted.
type Method string

const (
	MethodMappingDir    Method = "mapping_dir"    // prolog-written file per GPU
	MethodDevicesCgroup Method = "devices_cgroup" // v1 devices.list allow-list
	MethodEnviron       Method = "environ"        // SLURM_*_GPUS, CUDA_VISIBLE_DEVICES, ...
	MethodProcess       Method = "process"        // NVML compute process -> cgroup
)

// Methods lists the methods in the order they are applied.
var Methods = []Method{MethodMappingDir, MethodDevicesCgroup, MethodEnviron, MethodProcess}

// Job is what mapping needs to know about one job.
type Job struct {
	ID string
	// Env holds the GPU variables discovery found for the job.
	Env map[string]string
	// DevicesList is the job's v1 devices.list; "" on cgroup v2.
	DevicesList string
	// PIDs lists the job's processes (read lazily, once per scrape).
	PIDs func() []int
	// Seen keeps what the job's processes' environments said between
	// scrapes, for a caller that keeps per-job state itself (nil: the
	// mapper keeps it, and forgets it when the job is not passed).
	Seen *EnvSeen
}

// Assignment says which job holds a device and which method said so first.
type Assignment struct {
	JobID  string
	Method Method
}

// Problem is bad or conflicting input met while mapping.
type Problem struct {
	Cause string // bounded set: mapping_conflict, bad_gpu_ref, ...
	Err   error
}

// ConflictError is two methods (or two jobs under one method) claiming
// one GPU; the earlier claim is kept.
type ConflictError struct {
	UUID            string
	Kept, Other     string
	KeptBy, OtherBy Method
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("GPU %s: %s says job %s, %s says job %s; keeping job %s",
		e.UUID, e.KeptBy, e.Kept, e.OtherBy, e.Other, e.Kept)
}

// NVIDIA's character device major: /dev/nvidiaN is 195:N; 195:254 and
// 195:255 are nvidia-modeset and nvidiactl, which every GPU job opens.
const (
	nvidiaMajor    = 195
	nvidiaMaxMinor = 253
)

// envPIDsPerScrape bounds how many not-yet-read job processes' environments
// one scrape reads per job.
const envPIDsPerScrape = 64

// Mapper maps devices to jobs. It caches what it read from job processes'
// environments (a job's GPUs do not change while it runs).
type Mapper struct {
	MappingDir string // "" disables the mapping-directory method
	ProcFS     string
	// JobOfCgroupPath reads the job id out of a cgroup path of
	// /proc/<pid>/cgroup ("" for none). Job discovery owns that rule and
	// hands it in; nil skips the cgroup file and asks the jobs' process
	// lists only.
	JobOfCgroupPath func(path string) string

	mu  sync.Mutex
	env map[string]*EnvSeen // by job id, for jobs without Seen
}

// EnvSeen is what a job's processes' environments said: each process's
// environ is read once. Map updates it under the mapper's lock.
type EnvSeen struct {
	read map[int]bool // pids whose environ was read
	refs envRefs      // what their environments said
}

// NewEnvSeen returns an empty EnvSeen.
func NewEnvSeen() *EnvSeen { return &EnvSeen{read: map[int]bool{}} }

// ref is one way a job names a GPU.
type ref struct {
	kind  byte // 'i' index, 'u' uuid, 'm' minor
	index int
	uuid  string
}

// Map assigns devices to the given jobs. MIG instances are assigned on
// their own; a MIG-enabled parent is never assigned.
func (m *Mapper) Map(devs []Device, jobs []Job) (map[string]Assignment, []Problem) {
	ix := newDevIndex(devs)
	present := make(map[string]bool, len(jobs))
	for _, j := range jobs {
		present[j.ID] = true
	}
	st := &mapState{ix: ix, out: map[string]Assignment{}}
	if m.MappingDir != "" {
		m.fromMappingDir(st, present)
	}
	for _, j := range jobs {
		if j.DevicesList != "" {
			fromDevicesList(st, j)
		}
	}
	m.fromEnviron(st, jobs)
	m.fromProcesses(st, devs, jobs, present)
	return st.out, st.problems
}

type mapState struct {
	ix       *devIndex
	out      map[string]Assignment
	problems []Problem
}

func (st *mapState) problem(cause string, err error) {
	st.problems = append(st.problems, Problem{Cause: cause, Err: err})
}

// claim records that method says job holds the device uuid; the first
// claim wins and a later one for another job is a conflict.
func (st *mapState) claim(uuid, job string, method Method) {
	if uuid == "" {
		return
	}
	a, ok := st.out[uuid]
	if !ok {
		st.out[uuid] = Assignment{JobID: job, Method: method}
		return
	}
	if a.JobID != job {
		st.problem("mapping_conflict", &ConflictError{UUID: uuid, Kept: a.JobID, KeptBy: a.Method, Other: job, OtherBy: method})
	}
}

// fromMappingDir reads the GPU-to-job files sites write: one file per GPU,
// named by its index (dcgm-exporter's HPC job mapping), its GPU UUID, or
// a MIG instance's UUID (Princeton's jobstats), holding the ids of the
// jobs that hold it, one per line; a line may go on after the id
// (jobstats writes "<jobid> <uid>").
func (m *Mapper) fromMappingDir(st *mapState, present map[string]bool) {
	entries, err := os.ReadDir(m.MappingDir)
	if errors.Is(err, fs.ErrNotExist) {
		return // no prolog has written a mapping since boot (it lives in /run)
	}
	if err != nil {
		st.problem("mapping_dir_unreadable", err)
		return
	}
	sort.Slice(entries, func(a, b int) bool { return entries[a].Name() < entries[b].Name() })
	for _, e := range entries {
		if e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue // the prolog writes through dot-files and renames
		}
		r, ok := parseRef(e.Name())
		if !ok {
			st.problem("bad_mapping_file", fmt.Errorf("%s: name is neither a GPU index nor a UUID", filepath.Join(m.MappingDir, e.Name())))
			continue
		}
		b, err := os.ReadFile(filepath.Join(m.MappingDir, e.Name()))
		if err != nil {
			continue // removed by the epilog meanwhile
		}
		for _, line := range strings.Split(string(b), "\n") {
			f := strings.Fields(line)
			// A job that is no longer on the node is a file the epilog
			// has not removed yet: not a claim.
			if len(f) > 0 && present[f[0]] {
				st.claim(st.ix.resolve(r), f[0], MethodMappingDir)
			}
		}
	}
}

// fromDevicesList reads a v1 devices.list allow-list ("c 195:3 rwm").
func fromDevicesList(st *mapState, j Job) {
	b, err := os.ReadFile(j.DevicesList)
	if err != nil {
		return // job ended, or no devices controller: not a problem
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 2 {
			continue
		}
		if f[0] == "a" {
			return // unconstrained (ConstrainDevices=no): says nothing
		}
		maj, minor, ok := strings.Cut(f[1], ":")
		if f[0] != "c" || !ok || maj != strconv.Itoa(nvidiaMajor) {
			continue
		}
		n, err := strconv.Atoi(minor)
		if err != nil || n < 0 || n > nvidiaMaxMinor {
			continue // wildcard, nvidiactl or nvidia-modeset
		}
		st.claim(st.ix.resolve(ref{kind: 'm', index: n}), j.ID, MethodDevicesCgroup)
	}
}

// fromEnviron uses the discovery environment and the environments of the
// job's processes (read once per process, bounded per scrape).
func (m *Mapper) fromEnviron(st *mapState, jobs []Job) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.env == nil {
		m.env = map[string]*EnvSeen{}
	}
	keep := make(map[string]bool, len(jobs))
	for _, j := range jobs {
		e := j.Seen
		if e == nil {
			keep[j.ID] = true
			if e = m.env[j.ID]; e == nil {
				e = NewEnvSeen()
				m.env[j.ID] = e
			}
		}
		found := refsFromVars(j.Env)
		bad := found.bad
		if j.PIDs != nil && m.ProcFS != "" {
			budget := envPIDsPerScrape
			pids := j.PIDs()
			// Forget pids that are gone, so a long job that forks many
			// short processes does not grow the set without end.
			if len(e.read) > 0 {
				live := make(map[int]bool, len(pids))
				for _, pid := range pids {
					live[pid] = true
				}
				for pid := range e.read {
					if !live[pid] {
						delete(e.read, pid)
					}
				}
			}
			for _, pid := range pids {
				if e.read[pid] || budget == 0 {
					continue
				}
				budget--
				e.read[pid] = true
				if vars := readGPUVars(filepath.Join(m.ProcFS, strconv.Itoa(pid), "environ")); vars != nil {
					r := refsFromVars(vars)
					e.refs.merge(r)
					bad = append(bad, r.bad...)
				}
			}
		}
		for _, b := range bad {
			st.problem("bad_gpu_ref", fmt.Errorf("job %s: %s", j.ID, b))
		}
		found.merge(e.refs)
		for _, r := range found.usable() {
			st.claim(st.ix.resolve(r), j.ID, MethodEnviron)
		}
	}
	for id := range m.env {
		if !keep[id] {
			delete(m.env, id)
		}
	}
}

// fromProcesses maps the compute processes NVML lists on each device to
// the job whose cgroup holds them.
func (m *Mapper) fromProcesses(st *mapState, devs []Device, jobs []Job, present map[string]bool) {
	var byPID map[int]string // built on first need
	for _, d := range devs {
		if d.MIGEnabled {
			continue
		}
		for _, pid := range d.PIDs {
			id := ""
			if m.ProcFS != "" && m.JobOfCgroupPath != nil {
				id = jobFromCgroupFile(filepath.Join(m.ProcFS, strconv.Itoa(pid), "cgroup"), m.JobOfCgroupPath)
			}
			if !present[id] {
				// Slurm 26.05 SLUID directories, or no procfs: ask the
				// jobs' own process lists.
				if byPID == nil {
					byPID = map[int]string{}
					for _, j := range jobs {
						if j.PIDs != nil {
							for _, p := range j.PIDs() {
								byPID[p] = j.ID
							}
						}
					}
				}
				id = byPID[pid]
			}
			if id != "" {
				st.claim(d.UUID, id, MethodProcess)
			}
		}
	}
}

// jobFromCgroupFile returns the job id in /proc/<pid>/cgroup ("" if none).
func jobFromCgroupFile(path string, jobOf func(string) string) string {
	b, truncated, err := readProcFile(path, maxCgroupFile)
	if err != nil || truncated {
		return "" // the process exited (normal), or no kernel's file
	}
	for _, line := range strings.Split(string(b), "\n") {
		// hierarchy-id:controllers:path; the path is the third field.
		parts := strings.SplitN(line, ":", 3)
		if len(parts) < 3 {
			continue
		}
		if id := jobOf(parts[2]); id != "" {
			return id
		}
	}
	return ""
}

func isDigits(s string) bool {
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

func appendRefs(dst []ref, add ...ref) []ref {
	for _, r := range add {
		dup := false
		for _, o := range dst {
			if o == r {
				dup = true
				break
			}
		}
		if !dup {
			dst = append(dst, r)
		}
	}
	return dst
}
