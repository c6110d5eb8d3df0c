// SPDX-License-Identifier: Apache-2.0

package discovery

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const hybridMountinfo = `31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
33 31 0:30 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
`

const pureV2Mountinfo = `25 30 0:22 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot
`

const combinedV1Mountinfo = `33 25 0:29 / /sys/fs/cgroup/cpu,cpuacct rw,nosuid shared:9 - cgroup cgroup rw,cpu,cpuacct
34 25 0:30 / /sys/fs/cgroup/my\040mem rw,nosuid shared:10 - cgroup cgroup rw,memory
`

func TestLayoutFromMountinfo(t *testing.T) {
	cases := []struct {
		name, in, v2 string
		v1           map[string]string
	}{
		{"hybrid", hybridMountinfo, "/sys/fs/cgroup/unified", map[string]string{"cpu": "/sys/fs/cgroup/cpu", "cpuacct": "/sys/fs/cgroup/cpuacct", "memory": "/sys/fs/cgroup/memory"}},
		{"pure v2", pureV2Mountinfo, "/sys/fs/cgroup", map[string]string{}},
		{"combined v1", combinedV1Mountinfo, "", map[string]string{"cpu": "/sys/fs/cgroup/cpu,cpuacct", "cpuacct": "/sys/fs/cgroup/cpu,cpuacct", "memory": "/sys/fs/cgroup/my mem"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l, err := layoutFromMountinfo(strings.NewReader(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			if l.V2 != tc.v2 || len(l.V1) != len(tc.v1) {
				t.Fatalf("got %+v", l)
			}
			for k, v := range tc.v1 {
				if l.V1[k] != v {
					t.Errorf("%s: got %q want %q", k, l.V1[k], v)
				}
			}
		})
	}
	if _, err := layoutFromMountinfo(strings.NewReader("garbage\n\n- x\n")); err == nil {
		t.Error("no cgroup mount must be an error")
	}
}

func TestLayoutFromTree(t *testing.T) {
	l, err := DetectLayout(filepath.Join("..", "testdata", "node-v1", "cgroup"), "")
	if err != nil {
		t.Fatal(err)
	}
	if !l.Hybrid() || l.V1["memory"] == "" || l.V1["cpuacct"] == "" {
		t.Errorf("node-v1 fixture: got %v", l)
	}
	l, err = DetectLayout(filepath.Join("..", "testdata", "node-v2", "cgroup"), "")
	if err != nil || l.V2 == "" || len(l.V1) != 0 {
		t.Errorf("node-v2 fixture: got %v %v", l, err)
	}
	if _, err := DetectLayout(t.TempDir(), ""); err == nil {
		t.Error("an empty tree must be an error")
	}
}

// Multiple-slurmd prefixes (slurm_<node>) and plain slurm/ both count; a job
// seen in several controllers is one job.
func TestV1Prefixes(t *testing.T) {
	root := t.TempDir()
	for _, p := range []string{
		"memory/slurm_nodeA/uid_1001/job_7/step_0", "cpuacct/slurm_nodeA/uid_1001/job_7/step_0",
		"memory/slurm/uid_1002/job_8/step_batch", "memory/slurm/uid_x/job_9", "memory/slurm/uid_1002/job_abc",
		"memory/other/uid_1/job_10",
	} {
		if err := os.MkdirAll(filepath.Join(root, p), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	d := New(Config{Layout: Layout{V1: map[string]string{"memory": filepath.Join(root, "memory"), "cpuacct": filepath.Join(root, "cpuacct")}},
		ProcFS: t.TempDir(), LookupUser: func(uid int) (string, error) { return "u" + string(rune('0'+uid%10)), nil }})
	var causes []string
	jobs := d.Discover(t.Context(), func(cause string, err error) { causes = append(causes, cause) })
	if len(jobs) != 2 || jobs[0].ID != "7" || jobs[1].ID != "8" {
		t.Fatalf("got %d jobs: %v", len(jobs), jobs)
	}
	if jobs[0].V1["memory"] == "" || jobs[0].V1["cpuacct"] == "" {
		t.Errorf("job 7 controllers: %v", jobs[0].V1)
	}
	if jobs[0].Meta.UID != 1001 || jobs[1].Meta.UID != 1002 {
		t.Errorf("uids from the path: %d %d", jobs[0].Meta.UID, jobs[1].Meta.UID)
	}
	if len(causes) != 0 {
		t.Errorf("problems %v: skipped directories are counted, not reported as problems", causes)
	}
	if st := d.Status(); st.Skipped[SkipUnknownScheme] != 2 || st.Last.Dirs[SchemeJobID] != 2 || st.Last.Dirs[SchemeUnknown] != 2 {
		t.Errorf("uid_x and job_abc must be skipped as unknown_scheme: %+v", st)
	}
}
