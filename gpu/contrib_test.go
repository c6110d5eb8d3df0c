// SPDX-License-Identifier: Apache-2.0

package gpu

import (
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// runScript runs a contrib Slurm script under /bin/sh with a job's
// environment, as slurmd would.
func runScript(t *testing.T, script, dir string, env ...string) {
	t.Helper()
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh: cannot run the contrib scripts")
	}
	cmd := exec.Command(sh, filepath.Join("..", "contrib", "slurm", script))
	cmd.Env = append([]string{"PATH=/usr/bin:/bin", "JOBSCOPE_GPU_MAPPING_DIR=" + dir}, env...)
	if out, err := cmd.CombinedOutput(); err != nil || len(out) > 0 {
		t.Fatalf("%s %v: %v\n%s", script, env, err, out)
	}
}

func listDir(t *testing.T, dir string) string {
	t.Helper()
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		b, _ := os.ReadFile(filepath.Join(dir, e.Name()))
		names = append(names, e.Name()+"="+strings.TrimSpace(string(b)))
	}
	sort.Strings(names)
	return strings.Join(names, " ")
}

// The prolog/epilog pair writes what the mapping-directory method reads.
func TestContribMappingScripts(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "gpu-jobs") // the prolog creates it
	prolog, epilog := "prolog.d/jobscope-gpu-mapping.sh", "epilog.d/jobscope-gpu-mapping.sh"
	runScript(t, prolog, dir, "SLURM_JOB_ID=42", "SLURM_JOB_GPUS=0,2")
	runScript(t, prolog, dir, "SLURM_JOB_ID=43", "SLURM_JOB_GPUS=MIG-dddd0000-0000-0000-0000-000000000031")
	runScript(t, prolog, dir, "SLURM_JOB_ID=44", "SLURM_JOB_GPUS=../../etc/passwd,1-1,x")
	runScript(t, prolog, dir, "SLURM_JOB_ID=45") // no GPUs
	runScript(t, prolog, dir, "SLURM_JOB_ID=4;6", "SLURM_JOB_GPUS=0")
	if got, want := listDir(t, dir), "0=42 1=44 2=42 MIG-dddd0000-0000-0000-0000-000000000031=43"; got != want {
		t.Fatalf("after the prologs: %s, want %s", got, want)
	}
	got, probs := (&Mapper{MappingDir: dir}).Map(testNode(), []Job{{ID: "42"}, {ID: "43"}, {ID: "44"}})
	want(t, got, "GPU-aaaa0000-0000-0000-0000-000000000000", "42", MethodMappingDir)
	want(t, got, "GPU-bbbb0000-0000-0000-0000-000000000002", "42", MethodMappingDir)
	want(t, got, "GPU-aaaa0000-0000-0000-0000-000000000001", "44", MethodMappingDir)
	want(t, got, "MIG-dddd0000-0000-0000-0000-000000000031", "43", MethodMappingDir)
	if len(probs) != 0 {
		t.Errorf("problems %v", probs)
	}

	// GPU 2 goes to job 47 before job 42's epilog runs: it stays 47's.
	runScript(t, prolog, dir, "SLURM_JOB_ID=47", "SLURM_JOB_GPUS=2")
	os.WriteFile(filepath.Join(dir, ".0.42"), []byte("42"), 0o644) // an interrupted prolog
	runScript(t, epilog, dir, "SLURM_JOB_ID=42")
	if got, want := listDir(t, dir), "1=44 2=47 MIG-dddd0000-0000-0000-0000-000000000031=43"; got != want {
		t.Errorf("after job 42's epilog: %s, want %s", got, want)
	}
	runScript(t, epilog, dir, "SLURM_JOB_ID=43")
	runScript(t, epilog, filepath.Join(dir, "missing"), "SLURM_JOB_ID=43")
	if got, want := listDir(t, dir), "1=44 2=47"; got != want {
		t.Errorf("after job 43's epilog: %s, want %s", got, want)
	}
}
