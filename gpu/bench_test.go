// SPDX-License-Identifier: Apache-2.0

package gpu

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// BenchmarkMap maps an 8-GPU node with 8 jobs of 64 processes each through
// every method (mapping dir, environ, processes), after the first scrape
// has cached the environments: the steady state of a busy GPU node.
func BenchmarkMap(b *testing.B) {
	dir, proc := b.TempDir(), b.TempDir()
	var devs []Device
	var jobs []Job
	for i := 0; i < 8; i++ {
		uuid := fmt.Sprintf("GPU-00000000-0000-4000-8000-%012d", i)
		id := strconv.Itoa(1000 + i)
		var pids []int
		for p := 0; p < 64; p++ {
			pid := 10000 + 100*i + p
			pids = append(pids, pid)
			pd := filepath.Join(proc, strconv.Itoa(pid))
			os.MkdirAll(pd, 0o755)
			os.WriteFile(filepath.Join(pd, "environ"), []byte("SLURM_JOB_ID="+id+"\x00SLURM_JOB_GPUS="+strconv.Itoa(i)+"\x00CUDA_VISIBLE_DEVICES=0\x00"), 0o644)
			os.WriteFile(filepath.Join(pd, "cgroup"), []byte("0::/system.slice/slurmstepd.scope/job_"+id+"/step_0/user/task_0\n"), 0o644)
		}
		os.WriteFile(filepath.Join(dir, strconv.Itoa(i)), []byte(id+"\n"), 0o644)
		devs = append(devs, Device{Index: i, Minor: i, UUID: uuid, PIDs: pids[:4]})
		jobs = append(jobs, Job{ID: id, Env: map[string]string{"SLURM_JOB_GPUS": strconv.Itoa(i)}, PIDs: func() []int { return pids }})
	}
	m := &Mapper{MappingDir: dir, ProcFS: proc, JobOfCgroupPath: jobOfPath}
	m.Map(devs, jobs)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if got, _ := m.Map(devs, jobs); len(got) != 8 {
			b.Fatalf("%d mapped", len(got))
		}
	}
}
