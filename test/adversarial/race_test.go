// SPDX-License-Identifier: Apache-2.0

package adversarial

import (
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// demoArgs are the Makefile's DEMO_FLAGS (the bundled demo node: cgroup
// v2 jobs with processes, a fake GPU, IPMI power) with absolute paths.
func demoArgs(t *testing.T) []string {
	t.Helper()
	td, err := filepath.Abs("../../testdata")
	if err != nil {
		t.Fatal(err)
	}
	return []string{"--path.cgroupfs=" + td + "/demo/cgroup", "--path.procfs=" + td + "/demo/proc", "--path.sysfs=" + td + "/demo/sys",
		"--slurm.job-props-dir=" + td + "/demo/props", "--slurm.node-metadata.squeue=false", "--collector.ebpf=false",
		"--collector.power.ipmi=command", "--collector.power.ipmi-command=cat " + td + "/power/ipmi/good.txt", "--collector.power.emissions.country=FR",
		"--gpu.backend=fake", "--gpu.fake-file=" + td + "/gpu/demo.json", "--gpu.job-mapping-dir=" + td + "/gpu/demo-mapping"}
}

// Ten rounds of 20 concurrent scrapes of the demo node, whose scrapes
// share collections: against a -race binary (make test-race builds
// bin/jobscope-race and runs this case on it) any data race the
// concurrency reaches is a failure. Against the plain binary of make
// test-adversarial it checks only the answers.
func TestRaceConcurrentScrapes(t *testing.T) {
	n := start(t, nil, demoArgs(t)...)
	codes := map[int]int{}
	var mu sync.Mutex
	for range 10 {
		var wg sync.WaitGroup
		for range 20 {
			wg.Go(func() {
				status, _, _ := n.scrape(5 * time.Second)
				mu.Lock()
				codes[status]++
				mu.Unlock()
			})
		}
		wg.Wait()
	}
	n.mustScrape(5 * time.Second)
	stderr := n.stderrText()
	races := strings.Count(stderr, "WARNING: DATA RACE")
	report(t, "10 rounds of 20 concurrent scrapes of the demo node: statuses %v, %d data races reported", codes, races)
	if races > 0 || strings.Contains(stderr, "DATA RACE") {
		t.Errorf("data races in the binary's stderr:\n%s", stderr)
	}
	if codes[200] == 0 || codes[200]+codes[503] != 200 {
		t.Errorf("statuses %v: want only 200 and 503", codes)
	}
}

// stderrText reads what the binary wrote to stderr so far, under the
// writer's lock (the binary may still be writing).
func (n *node) stderrText() string {
	lw := n.cmd.Stderr.(*lockedWriter)
	lw.mu.Lock()
	defer lw.mu.Unlock()
	return n.stderr.String()
}
