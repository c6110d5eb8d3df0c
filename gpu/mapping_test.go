// SPDX-License-Identifier: Apache-2.0

package gpu

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// node is a DGX-like device list: GPUs 0-2 whole, GPU 3 split into two
// MIG instances.
func testNode() []Device {
	return []Device{
		{Index: 0, Minor: 0, UUID: "GPU-aaaa0000-0000-0000-0000-000000000000", Model: "A100"},
		{Index: 1, Minor: 1, UUID: "GPU-aaaa0000-0000-0000-0000-000000000001", Model: "A100"},
		{Index: 2, Minor: 2, UUID: "GPU-bbbb0000-0000-0000-0000-000000000002", Model: "A100", PIDs: []int{700}},
		{Index: 3, Minor: 3, UUID: "GPU-cccc0000-0000-0000-0000-000000000003", Model: "A100", MIGEnabled: true},
		{Index: 3, Minor: 3, UUID: "MIG-dddd0000-0000-0000-0000-000000000031", Model: "A100 MIG 3g.20gb",
			ParentUUID: "GPU-cccc0000-0000-0000-0000-000000000003", GPUInstanceID: 1, ComputeInstanceID: 0, PIDs: []int{800}},
		{Index: 3, Minor: 3, UUID: "MIG-dddd0000-0000-0000-0000-000000000032", Model: "A100 MIG 3g.20gb",
			ParentUUID: "GPU-cccc0000-0000-0000-0000-000000000003", GPUInstanceID: 2, ComputeInstanceID: 0},
	}
}

func write(t *testing.T, path, content string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func pids(p ...int) func() []int { return func() []int { return p } }

func causes(ps []Problem) string {
	var c []string
	for _, p := range ps {
		c = append(c, p.Cause)
	}
	return strings.Join(c, ",")
}

func want(t *testing.T, got map[string]Assignment, uuid, job string, m Method) {
	t.Helper()
	a, ok := got[uuid]
	if job == "" {
		if ok {
			t.Errorf("%s: assigned to %+v, want no job", uuid, a)
		}
		return
	}
	if !ok || a.JobID != job || a.Method != m {
		t.Errorf("%s: got %+v (present %v), want job %s by %s", uuid, a, ok, job, m)
	}
}

func TestMapMappingDir(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "0"), "10\n")
	write(t, filepath.Join(dir, "MIG-dddd0000-0000-0000-0000-000000000032"), "11\n")
	write(t, filepath.Join(dir, "1"), "99\n") // stale: job 99 has ended
	write(t, filepath.Join(dir, ".1.tmp"), "10\n")
	write(t, filepath.Join(dir, "junk"), "10\n")
	write(t, filepath.Join(dir, "3"), "10\n") // MIG-enabled parent: not assignable
	m := &Mapper{MappingDir: dir}
	got, probs := m.Map(testNode(), []Job{{ID: "10"}, {ID: "11"}})
	want(t, got, "GPU-aaaa0000-0000-0000-0000-000000000000", "10", MethodMappingDir)
	want(t, got, "MIG-dddd0000-0000-0000-0000-000000000032", "11", MethodMappingDir)
	want(t, got, "GPU-aaaa0000-0000-0000-0000-000000000001", "", "")
	want(t, got, "GPU-cccc0000-0000-0000-0000-000000000003", "", "")
	if causes(probs) != "bad_mapping_file" {
		t.Errorf("problems %q, want bad_mapping_file", causes(probs))
	}

	// Not there yet (no GPU job since boot): silent. Not a directory: a problem.
	m = &Mapper{MappingDir: filepath.Join(dir, "missing")}
	if _, probs := m.Map(testNode(), nil); len(probs) != 0 {
		t.Errorf("missing dir: problems %q", causes(probs))
	}
	m = &Mapper{MappingDir: filepath.Join(dir, "0")}
	if _, probs := m.Map(testNode(), nil); causes(probs) != "mapping_dir_unreadable" {
		t.Errorf("a file as the dir: problems %q", causes(probs))
	}
}

func TestMapDevicesCgroup(t *testing.T) {
	dir := t.TempDir()
	list := write(t, filepath.Join(dir, "devices.list"), "c 1:3 rwm\nc 195:255 rw\nc 195:254 rw\nc 195:1 rw\nc 195:* m\nb 195:0 r\n")
	all := write(t, filepath.Join(dir, "all.list"), "a *:* rwm\n")
	got, probs := (&Mapper{}).Map(testNode(), []Job{{ID: "20", DevicesList: list}, {ID: "21", DevicesList: all}, {ID: "22", DevicesList: filepath.Join(dir, "gone")}})
	want(t, got, "GPU-aaaa0000-0000-0000-0000-000000000001", "20", MethodDevicesCgroup)
	if len(got) != 1 || len(probs) != 0 {
		t.Errorf("got %v problems %v, want only GPU 1", got, probs)
	}
}

func TestMapEnviron(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		want []string // uuids
		bad  bool
	}{
		{"job gpus indices", map[string]string{"SLURM_JOB_GPUS": "0,1"}, []string{"GPU-aaaa0000-0000-0000-0000-000000000000", "GPU-aaaa0000-0000-0000-0000-000000000001"}, false},
		{"step gpus range", map[string]string{"SLURM_STEP_GPUS": "1-2"}, []string{"GPU-aaaa0000-0000-0000-0000-000000000001", "GPU-bbbb0000-0000-0000-0000-000000000002"}, false},
		// With ConstrainDevices, CUDA_VISIBLE_DEVICES=0 inside the step is
		// the job's first GPU (here 2), not node GPU 0.
		{"cuda relative index ignored", map[string]string{"SLURM_JOB_GPUS": "2", "CUDA_VISIBLE_DEVICES": "0"}, []string{"GPU-bbbb0000-0000-0000-0000-000000000002"}, false},
		{"cuda index alone", map[string]string{"CUDA_VISIBLE_DEVICES": "1"}, []string{"GPU-aaaa0000-0000-0000-0000-000000000001"}, false},
		{"cuda uuid (Slurm 25.11)", map[string]string{"SLURM_JOB_GPUS": "0", "CUDA_VISIBLE_DEVICES": "GPU-bbbb0000-0000-0000-0000-000000000002"}, []string{"GPU-aaaa0000-0000-0000-0000-000000000000", "GPU-bbbb0000-0000-0000-0000-000000000002"}, false},
		{"uuid prefix", map[string]string{"CUDA_VISIBLE_DEVICES": "GPU-bbbb"}, []string{"GPU-bbbb0000-0000-0000-0000-000000000002"}, false},
		{"ambiguous prefix", map[string]string{"CUDA_VISIBLE_DEVICES": "GPU-aaaa"}, nil, false},
		{"mig uuid", map[string]string{"CUDA_VISIBLE_DEVICES": "MIG-dddd0000-0000-0000-0000-000000000031"}, []string{"MIG-dddd0000-0000-0000-0000-000000000031"}, false},
		{"mig legacy form", map[string]string{"CUDA_VISIBLE_DEVICES": "MIG-GPU-cccc0000-0000-0000-0000-000000000003/2/0"}, []string{"MIG-dddd0000-0000-0000-0000-000000000032"}, false},
		{"mig parent index", map[string]string{"SLURM_JOB_GPUS": "3"}, nil, false},
		{"gpu ordinal", map[string]string{"GPU_DEVICE_ORDINAL": "GPU-aaaa0000-0000-0000-0000-000000000001"}, []string{"GPU-aaaa0000-0000-0000-0000-000000000001"}, false},
		{"no dev files", map[string]string{"CUDA_VISIBLE_DEVICES": "NoDevFiles"}, nil, false},
		{"garbage", map[string]string{"SLURM_JOB_GPUS": "gpu:a100"}, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, probs := (&Mapper{}).Map(testNode(), []Job{{ID: "30", Env: tc.env}})
			if len(got) != len(tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
			for _, u := range tc.want {
				want(t, got, u, "30", MethodEnviron)
			}
			if (causes(probs) == "bad_gpu_ref") != tc.bad {
				t.Errorf("problems %q, bad=%v", causes(probs), tc.bad)
			}
		})
	}
}

// A pam_slurm_adopt'ed or extern-step process has no GPU variables; the
// step processes do, each with its own SLURM_STEP_GPUS.
func TestMapEnvironOfProcesses(t *testing.T) {
	proc := t.TempDir()
	write(t, filepath.Join(proc, "500", "environ"), "HOME=/root\x00")
	write(t, filepath.Join(proc, "501", "environ"), "SLURM_JOB_ID=40\x00SLURM_STEP_GPUS=0\x00CUDA_VISIBLE_DEVICES=0\x00")
	write(t, filepath.Join(proc, "502", "environ"), "SLURM_JOB_ID=40\x00SLURM_STEP_GPUS=1\x00CUDA_VISIBLE_DEVICES=0\x00")
	m := &Mapper{ProcFS: proc, JobOfCgroupPath: jobOfPath}
	job := Job{ID: "40", PIDs: pids(500, 501, 502, 503)}
	got, _ := m.Map(testNode(), []Job{job})
	want(t, got, "GPU-aaaa0000-0000-0000-0000-000000000000", "40", MethodEnviron)
	want(t, got, "GPU-aaaa0000-0000-0000-0000-000000000001", "40", MethodEnviron)

	// The processes exit; what they said is kept while the job runs.
	for _, p := range []string{"501", "502"} {
		os.RemoveAll(filepath.Join(proc, p))
	}
	got, _ = m.Map(testNode(), []Job{job})
	want(t, got, "GPU-aaaa0000-0000-0000-0000-000000000001", "40", MethodEnviron)

	// A process whose environment has only a step-relative
	// CUDA_VISIBLE_DEVICES index (a container with a clean environment)
	// does not claim node GPU 0 while the job's Slurm variables name GPU 2.
	write(t, filepath.Join(proc, "600", "environ"), "CUDA_VISIBLE_DEVICES=0\x00")
	got, _ = (&Mapper{ProcFS: proc, JobOfCgroupPath: jobOfPath}).Map(testNode(), []Job{{ID: "41", Env: map[string]string{"SLURM_JOB_GPUS": "2"}, PIDs: pids(600)}})
	want(t, got, "GPU-aaaa0000-0000-0000-0000-000000000000", "", "")
	want(t, got, "GPU-bbbb0000-0000-0000-0000-000000000002", "41", MethodEnviron)

	// The job ends: its cache entry goes.
	m.Map(testNode(), nil)
	if len(m.env) != 0 {
		t.Errorf("env cache kept %d ended jobs", len(m.env))
	}
}

func TestMapProcesses(t *testing.T) {
	proc := t.TempDir()
	write(t, filepath.Join(proc, "700", "cgroup"), "0::/system.slice/slurmstepd.scope/job_50/step_0/user/task_0\n")
	// v1: the job in one hierarchy is enough.
	write(t, filepath.Join(proc, "800", "cgroup"), "12:pids:/\n4:memory:/slurm/uid_1000/job_51/step_0/task_0\n")
	got, _ := (&Mapper{ProcFS: proc, JobOfCgroupPath: jobOfPath}).Map(testNode(), []Job{{ID: "50"}, {ID: "51"}})
	want(t, got, "GPU-bbbb0000-0000-0000-0000-000000000002", "50", MethodProcess)
	want(t, got, "MIG-dddd0000-0000-0000-0000-000000000031", "51", MethodProcess)

	// Slurm 26.05 names the job directory by SLUID: fall back to the
	// jobs' process lists.
	write(t, filepath.Join(proc, "700", "cgroup"), "0::/system.slice/slurmstepd.scope/job_s1u2i3d/step_0\n")
	got, _ = (&Mapper{ProcFS: proc, JobOfCgroupPath: jobOfPath}).Map(testNode(), []Job{{ID: "52", PIDs: pids(1, 700)}})
	want(t, got, "GPU-bbbb0000-0000-0000-0000-000000000002", "52", MethodProcess)

	// A process outside any job (a stray CUDA daemon) maps to nothing.
	write(t, filepath.Join(proc, "700", "cgroup"), "0::/system.slice/nvidia-persistenced.service\n")
	got, _ = (&Mapper{ProcFS: proc, JobOfCgroupPath: jobOfPath}).Map(testNode(), []Job{{ID: "52", PIDs: pids(1)}})
	want(t, got, "GPU-bbbb0000-0000-0000-0000-000000000002", "", "")
}

// Methods apply in order: the earlier one wins and a disagreement is
// reported; agreement is silent.
func TestMapConflicts(t *testing.T) {
	dir, proc := t.TempDir(), t.TempDir()
	write(t, filepath.Join(dir, "2"), "60\n")
	write(t, filepath.Join(proc, "700", "cgroup"), "0::/system.slice/slurmstepd.scope/job_61/step_0\n")
	list := write(t, filepath.Join(proc, "devices.list"), "c 195:0 rw\n")
	jobs := []Job{
		{ID: "60", Env: map[string]string{"SLURM_JOB_GPUS": "2"}},
		{ID: "61", DevicesList: list, Env: map[string]string{"SLURM_JOB_GPUS": "0"}},
		{ID: "62", Env: map[string]string{"SLURM_JOB_GPUS": "0"}},
	}
	got, probs := (&Mapper{MappingDir: dir, ProcFS: proc, JobOfCgroupPath: jobOfPath}).Map(testNode(), jobs)
	want(t, got, "GPU-bbbb0000-0000-0000-0000-000000000002", "60", MethodMappingDir)
	want(t, got, "GPU-aaaa0000-0000-0000-0000-000000000000", "61", MethodDevicesCgroup)
	if causes(probs) != "mapping_conflict,mapping_conflict" {
		t.Fatalf("problems %q", causes(probs))
	}
	var ce *ConflictError
	if !errors.As(probs[0].Err, &ce) || ce.Kept != "61" || ce.Other != "62" || ce.OtherBy != MethodEnviron {
		t.Errorf("first conflict %v", probs[0].Err)
	}
	if !errors.As(probs[1].Err, &ce) || ce.Kept != "60" || ce.Other != "61" || ce.KeptBy != MethodMappingDir || ce.OtherBy != MethodProcess {
		t.Errorf("second conflict %v", probs[1].Err)
	}
}

// An allocated GPU with nothing running is still the job's.
func TestMapIdleAllocated(t *testing.T) {
	devs := testNode()
	got, _ := (&Mapper{}).Map(devs, []Job{{ID: "70", Env: map[string]string{"SLURM_JOB_GPUS": "1"}}})
	if len(devs[1].PIDs) != 0 {
		t.Fatal("fixture: GPU 1 must be idle")
	}
	want(t, got, devs[1].UUID, "70", MethodEnviron)
}

// Every file format sites write names a GPU by index, GPU UUID or MIG
// UUID: dcgm-exporter's per-index files (a job id per line), jobstats'
// MIG-<uuid> files ("<jobid> <uid>"), GPU-<uuid> files; UUIDs in any case.
func TestMapMappingDirFormats(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "0"), "10\n11\n")                                         // dcgm-exporter: two jobs share GPU 0
	write(t, filepath.Join(dir, "MIG-dddd0000-0000-0000-0000-000000000031"), "12 1001\n") // jobstats
	write(t, filepath.Join(dir, "GPU-BBBB0000-0000-0000-0000-000000000002"), "\t13\t\n")  // upper-case hex
	write(t, filepath.Join(dir, "gpu-aaaa0000-0000-0000-0000-000000000001"), "14\n")      // lower-case prefix
	got, probs := (&Mapper{MappingDir: dir}).Map(testNode(), []Job{{ID: "10"}, {ID: "11"}, {ID: "12"}, {ID: "13"}, {ID: "14"}})
	want(t, got, "GPU-aaaa0000-0000-0000-0000-000000000000", "10", MethodMappingDir)
	want(t, got, "MIG-dddd0000-0000-0000-0000-000000000031", "12", MethodMappingDir)
	want(t, got, "GPU-bbbb0000-0000-0000-0000-000000000002", "13", MethodMappingDir)
	want(t, got, "GPU-aaaa0000-0000-0000-0000-000000000001", "14", MethodMappingDir)
	// The second job on GPU 0 is a conflict, reported, first claim kept.
	if causes(probs) != "mapping_conflict" {
		t.Errorf("problems %q", causes(probs))
	}
}

// With gres.conf Flags=env_uuid Slurm names GPUs by UUID in SLURM_JOB_GPUS
// and SLURM_STEP_GPUS too, MIG instances by MIG UUID; lists may mix forms.
func TestMapEnvironUUIDs(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		want []string
	}{
		{"job gpus uuids", map[string]string{"SLURM_JOB_GPUS": "GPU-aaaa0000-0000-0000-0000-000000000000,GPU-bbbb0000-0000-0000-0000-000000000002"},
			[]string{"GPU-aaaa0000-0000-0000-0000-000000000000", "GPU-bbbb0000-0000-0000-0000-000000000002"}},
		{"step gpus mig uuid", map[string]string{"SLURM_STEP_GPUS": "MIG-dddd0000-0000-0000-0000-000000000032"},
			[]string{"MIG-dddd0000-0000-0000-0000-000000000032"}},
		{"mixed index and uuid, spaces", map[string]string{"SLURM_JOB_GPUS": " 1 , GPU-bbbb0000-0000-0000-0000-000000000002"},
			[]string{"GPU-aaaa0000-0000-0000-0000-000000000001", "GPU-bbbb0000-0000-0000-0000-000000000002"}},
		{"cuda mig uuids", map[string]string{"CUDA_VISIBLE_DEVICES": "MIG-dddd0000-0000-0000-0000-000000000031,MIG-dddd0000-0000-0000-0000-000000000032"},
			[]string{"MIG-dddd0000-0000-0000-0000-000000000031", "MIG-dddd0000-0000-0000-0000-000000000032"}},
		{"upper-case hex", map[string]string{"CUDA_VISIBLE_DEVICES": "GPU-AAAA0000-0000-0000-0000-000000000001"},
			[]string{"GPU-aaaa0000-0000-0000-0000-000000000001"}},
		{"legacy mig form, any case", map[string]string{"GPU_DEVICE_ORDINAL": "mig-gpu-CCCC0000-0000-0000-0000-000000000003/1/0"},
			[]string{"MIG-dddd0000-0000-0000-0000-000000000031"}},
		{"uuid of a gpu not on this node", map[string]string{"SLURM_JOB_GPUS": "GPU-ffff0000-0000-0000-0000-000000000009"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, probs := (&Mapper{}).Map(testNode(), []Job{{ID: "31", Env: tc.env}})
			if len(got) != len(tc.want) || len(probs) != 0 {
				t.Errorf("got %v problems %v, want %v", got, probs, tc.want)
			}
			for _, u := range tc.want {
				want(t, got, u, "31", MethodEnviron)
			}
		})
	}
}

// jobOfPath stands in for job discovery's rule, which job discovery tests:
// the id after "job_" when it is all digits.
func jobOfPath(p string) string {
	for _, el := range strings.Split(p, "/") {
		if id, ok := strings.CutPrefix(el, "job_"); ok && isDigits(id) {
			return id
		}
	}
	return ""
}

// dcgm-exporter's job mapping has no per-instance files: on a MIG GPU a
// site's prolog writes the parent's index with one line per job holding an
// instance (dcgm-exporter then labels every instance with every job). That
// says nothing about which instance is whose, so it maps nothing, raises no
// conflict, and the jobs' environment decides.
func TestMapDcgmExporterMIGFile(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "3"), "20\n21\n")
	jobs := []Job{
		{ID: "20", Env: map[string]string{"CUDA_VISIBLE_DEVICES": "MIG-dddd0000-0000-0000-0000-000000000031"}},
		{ID: "21", Env: map[string]string{"CUDA_VISIBLE_DEVICES": "MIG-dddd0000-0000-0000-0000-000000000032"}},
	}
	got, probs := (&Mapper{MappingDir: dir}).Map(testNode(), jobs)
	if len(probs) != 0 {
		t.Errorf("problems %q", causes(probs))
	}
	want(t, got, "MIG-dddd0000-0000-0000-0000-000000000031", "20", MethodEnviron)
	want(t, got, "MIG-dddd0000-0000-0000-0000-000000000032", "21", MethodEnviron)
}
