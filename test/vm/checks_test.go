// SPDX-License-Identifier: Apache-2.0

package vm

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// percoreScript runs guest/checks.sh's check_percore against a made-up job:
// its cgroup files in $JOBDIR, its scrape in $SCRAPE. It prints one line per
// row: status, then the assertion.
const percoreScript = `
set -uo pipefail
. test/lib/assert.sh
. test/vm/guest/jobscope.sh
. test/vm/guest/checks.sh
jobdir() { echo "$JOBDIR"; }
scrape() { cp "$SCRAPE" "$2"; }
check_percore job 42 "$M/scrape.txt"
for r in "${ROWS[@]}"; do
	IFS=$'\x1f' read -r n e m s <<<"$r"
	printf '%s\t%s\t%s\t%s\n' "$s" "$n" "$e" "$m"
done
`

// TestCheckPercore: the per-core rows hold for any share of the job's CPU
// time outside its cpuset, and fail where per-core time trails, is counted
// twice, or is filed under the wrong cores. VM B's numbers (issue 25): a
// two-step job with 18.2422 s in cpu.stat, 18.0576 s per-core and 0.1846 s
// outside its cpuset.
func TestCheckPercore(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	const usageUsec = 18242200
	for _, tc := range []struct {
		name    string
		cpuset  string
		cores   map[int]float64
		outside float64 // 0: no series
		fail    []string
	}{
		{name: "VM B: 1% outside the cpuset", cpuset: "0-1", cores: map[int]float64{0: 9.0288, 1: 9.0288}, outside: 0.1846},
		{name: "nothing outside", cpuset: "0-1", cores: map[int]float64{0: 9.1211, 1: 9.1211}},
		{name: "an idle core of the cpuset", cpuset: "2-3", cores: map[int]float64{2: 18.0576, 3: 0}, outside: 0.1846},
		{name: "most of it outside", cpuset: "0", cores: map[int]float64{0: 12.2422}, outside: 6},
		{
			name: "per-core trails by 2%", cpuset: "0-1", cores: map[int]float64{0: 8.85, 1: 8.85}, outside: 0.1846,
			fail: []string{"per-core sum == same scrape's cpu.stat - outside-cpuset", "per-core + outside-cpuset == cpu.stat"},
		},
		{
			name: "per-core counts the outside time too", cpuset: "0-1", cores: map[int]float64{0: 9.1211, 1: 9.1211}, outside: 0.1846,
			fail: []string{"per-core sum == same scrape's cpu.stat - outside-cpuset", "per-core + outside-cpuset == cpu.stat"},
		},
		{
			name: "a core of the cpuset taken for one outside", cpuset: "0-1", cores: map[int]float64{0: 9.0288}, outside: 9.2134,
			fail: []string{"a per-core series on each core of cpuset 0,1"},
		},
		{
			name: "a series for a core outside the cpuset", cpuset: "0", cores: map[int]float64{0: 9.1211, 5: 9.1211},
			fail: []string{"no per-core series outside cpuset 0"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			job := filepath.Join(dir, "job")
			if err := os.Mkdir(job, 0o755); err != nil {
				t.Fatal(err)
			}
			write := func(path, text string) {
				if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			write(filepath.Join(job, "cpu.stat"), fmt.Sprintf("usage_usec %d\nuser_usec 0\nsystem_usec 0\n", usageUsec))
			write(filepath.Join(job, "cpuset.cpus.effective"), tc.cpuset+"\n")
			var m strings.Builder
			fmt.Fprintf(&m, "slurm_job_cpu_usage_seconds_total{jobid=\"42\",user=\"alice\",account=\"physics\"} %g\n", float64(usageUsec)/1e6)
			for core, s := range tc.cores {
				fmt.Fprintf(&m, "slurm_job_cpu_core_seconds_total{jobid=\"42\",user=\"alice\",account=\"physics\",core=\"%d\"} %g\n", core, s)
			}
			if tc.outside > 0 {
				fmt.Fprintf(&m, "slurm_job_cpu_outside_cpuset_seconds_total{jobid=\"42\",user=\"alice\",account=\"physics\"} %g\n", tc.outside)
			}
			write(filepath.Join(dir, "metrics.txt"), m.String())
			cmd := exec.Command("bash", "-c", percoreScript)
			cmd.Dir = root
			cmd.Env = append(os.Environ(), "M="+filepath.Join(dir, "out"), "JOBDIR="+job, "SCRAPE="+filepath.Join(dir, "metrics.txt"))
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("check_percore: %v\n%s", err, out)
			}
			var failed []string
			rows := 0
			for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
				f := strings.Split(l, "\t")
				if len(f) != 4 {
					t.Fatalf("row %q: not status, name, expected, measured", l)
				}
				rows++
				if f[0] != "PASS" {
					failed = append(failed, strings.TrimPrefix(f[1], "job: "))
				}
				t.Logf("%-4s %s: expected %s, measured %s", f[0], f[1], f[2], f[3])
			}
			if rows != 5 {
				t.Errorf("%d rows, want 5", rows)
			}
			slices.Sort(failed)
			want := slices.Clone(tc.fail)
			slices.Sort(want)
			if !slices.Equal(failed, want) {
				t.Errorf("failed rows %q, want %q", failed, want)
			}
		})
	}
}
