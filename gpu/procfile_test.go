// SPDX-License-Identifier: Apache-2.0

package gpu

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadGPUVarsBounded: an environment is read up to maxEnviron and cut
// after its last whole record; a GPU variable past the cut, or one whose
// value is over maxGPUValue, is not used; a planted symlink as environ or
// cgroup is not followed.
func TestReadGPUVarsBounded(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	// SLURM_STEP_GPUS straddles the cut: its first digits alone would
	// name another device.
	pad := "PAD=" + strings.Repeat("x", maxEnviron-len("PAD=")-len("SLURM_JOB_GPUS=1\x00")-len("SLURM_STEP_GPUS=12")) + "\x00"
	cut := write("cut", "SLURM_JOB_GPUS=1\x00"+pad+"SLURM_STEP_GPUS=12345\x00")
	if got := readGPUVars(cut); len(got) != 1 || got["SLURM_JOB_GPUS"] != "1" {
		t.Errorf("cut environment: %v, want SLURM_JOB_GPUS=1 alone", got)
	}
	long := write("long", "CUDA_VISIBLE_DEVICES="+strings.Repeat("0,", maxGPUValue)+"0\x00SLURM_JOB_GPUS=2\x00")
	if got := readGPUVars(long); len(got) != 1 || got["SLURM_JOB_GPUS"] != "2" {
		t.Errorf("long value: CUDA_VISIBLE_DEVICES of %d bytes kept, SLURM_JOB_GPUS %q; want SLURM_JOB_GPUS=2 alone",
			len(got["CUDA_VISIBLE_DEVICES"]), got["SLURM_JOB_GPUS"])
	}
	link := filepath.Join(dir, "environ")
	if err := os.Symlink(write("target", "SLURM_JOB_GPUS=3\x00"), link); err != nil {
		t.Fatal(err)
	}
	if got := readGPUVars(link); got != nil {
		t.Errorf("symlinked environ followed: %v", got)
	}
	cgLink := filepath.Join(dir, "cgroup")
	if err := os.Symlink(write("cgtarget", "0::/system.slice/slurmstepd.scope/job_7/step_0\n"), cgLink); err != nil {
		t.Fatal(err)
	}
	jobOf := func(p string) string {
		if strings.Contains(p, "job_7") {
			return "7"
		}
		return ""
	}
	if id := jobFromCgroupFile(cgLink, jobOf); id != "" {
		t.Errorf("symlinked cgroup file followed: job %q", id)
	}
	if id := jobFromCgroupFile(filepath.Join(dir, "cgtarget"), jobOf); id != "7" {
		t.Errorf("cgroup file: job %q, want 7", id)
	}
	big := write("bigcg", strings.Repeat("1:cpu:/\n", maxCgroupFile/8)+"0::/system.slice/slurmstepd.scope/job_7/step_0\n")
	if id := jobFromCgroupFile(big, jobOf); id != "" {
		t.Errorf("cgroup file over its bound: job %q", id)
	}
}
