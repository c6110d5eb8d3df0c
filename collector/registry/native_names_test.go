// SPDX-License-Identifier: Apache-2.0

package registry

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jobscope/jobscope/collector"
)

// nativeNames reads the metric names of slurmctld's own endpoint from
// testdata/slurm/native-*/*.txt: bare names (a name per line, more fields
// allowed) or OpenMetrics exposition ("# TYPE name type").
func nativeNames(t *testing.T) map[string]string {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join("..", "..", "testdata", "slurm", "native-*", "*.txt"))
	names := map[string]string{}
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(fh)
		for sc.Scan() {
			line := strings.TrimSpace(sc.Text())
			if rest, ok := strings.CutPrefix(line, "# TYPE "); ok {
				line = rest
			} else if line == "" || line[0] == '#' {
				continue
			}
			names[strings.FieldsFunc(line, func(r rune) bool { return r == ' ' || r == '{' })[0]] = filepath.Base(filepath.Dir(f))
		}
		fh.Close()
	}
	if len(names) < 7 {
		t.Fatalf("%d native metric names in testdata/slurm/native-*: the list is missing", len(names))
	}
	return names
}

// No jobscope metric may share a name with slurmctld's own endpoint
// (25.11+): a site scraping both would get one name with two meanings.
func TestNoNameSharedWithSlurmctld(t *testing.T) {
	native := nativeNames(t)
	// The list must hold the names that once clashed, or this test
	// proves nothing.
	for _, old := range []string{"slurm_jobs", "slurm_jobs_pending", "slurm_nodes", "slurm_user_jobs", "slurm_account_jobs", "slurm_partition_cpus", "slurm_partition_nodes"} {
		if native[old] == "" {
			t.Errorf("native list lacks %s", old)
		}
	}
	ours := map[string]bool{}
	for _, d := range collector.FrameworkDescs() {
		ours[d.Name] = true
	}
	for _, f := range Factories() {
		if f.Descs == nil {
			continue
		}
		for _, d := range f.Descs() {
			ours[d.Name] = true
		}
	}
	if len(ours) < 50 {
		t.Fatalf("only %d jobscope metric names", len(ours))
	}
	for n := range ours {
		if src, clash := native[n]; clash {
			t.Errorf("%s is also a metric of slurmctld's endpoint (%s)", n, src)
		}
	}
}
