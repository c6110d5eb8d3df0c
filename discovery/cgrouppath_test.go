// SPDX-License-Identifier: Apache-2.0

package discovery

import "testing"

// FuzzCgroupPath reads the job id out of /proc/<pid>/cgroup lines (the
// GPU mapper uses this rule for NVML's compute processes).
func FuzzCgroupPath(f *testing.F) {
	for _, s := range []string{
		"0::/system.slice/slurmstepd.scope/job_50/step_0/user/task_0",
		"4:memory:/slurm_node1/uid_1000/job_51/step_0/task_0",
		"0::/system.slice/slurmstepd.scope/job_s1u2i3d/step_0",
		"0::/user.slice/user-1000.slice/session-3.scope",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		if id := JobIDFromCgroupPath(line); id != "" && !isJobID(id) {
			t.Fatalf("job id %q from %q", id, line)
		}
	})
}
