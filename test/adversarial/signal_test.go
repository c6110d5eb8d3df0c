// SPDX-License-Identifier: Apache-2.0

package adversarial

import (
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jobscope/jobscope/internal/testutil"
)

// pinnedInodes maps each file under the bpffs pin directory to its inode:
// maps reused across a restart keep theirs, re-created ones get new ones.
// pinnedInodes: the pinned maps' inodes, by path. The programs' links under
// links/ are left out: a restart re-pins each tracing link (a new link
// attached, then renamed over the old pin), so theirs change by design.
func pinnedInodes(dir string) map[string]uint64 {
	out := map[string]uint64{}
	_ = filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.IsDir() && fi.Name() == "links" {
			return filepath.SkipDir
		}
		if err == nil && !fi.IsDir() {
			out[p] = fi.Sys().(*syscall.Stat_t).Ino
		}
		return nil
	})
	return out
}

// pinnedLinks: the names of the links pinned under dir/links.
func pinnedLinks(dir string) []string {
	entries, _ := os.ReadDir(filepath.Join(dir, "links"))
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// SIGTERM while a scrape waits for a slow BMC (an IPMI command that sleeps)
// ends the process within 2 s with status 0; the command is killed with it.
// As root, with the ebpf collector on, the pinned maps stay and a restart
// reuses them (their inodes are unchanged).
func TestSIGTERMDuringSlowScrape(t *testing.T) {
	_, args := tree(t, 8)
	pin := ""
	if os.Geteuid() == 0 {
		pin = filepath.Join("/sys/fs/bpf", fmt.Sprintf("jobscope-adversarial-%d", os.Getpid()))
		t.Cleanup(func() { os.RemoveAll(pin) })
		args = append(args, "--collector.ebpf=true", "--bpf.pin-path="+pin)
	}
	args = append(args, "--collector.power=true", "--collector.power.rapl=false", "--collector.power.ipmi=command", "--collector.power.ipmi-command=/bin/sleep 30")
	m := marker(t)
	n := start(t, []string{m}, args...)
	scraped := make(chan time.Duration, 1)
	go func() {
		start := time.Now()
		req, _ := http.NewRequest("GET", n.url+"/metrics", nil)
		req.Header.Set("X-Prometheus-Scrape-Timeout-Seconds", "30")
		if resp, err := http.DefaultClient.Do(req); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		scraped <- time.Since(start)
	}()
	time.Sleep(time.Second)
	select {
	case d := <-scraped:
		t.Fatalf("the scrape was not slow: it took %v", d)
	default: // it waits for the BMC
	}
	sent := time.Now()
	_ = n.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-n.exited:
	case <-time.After(5 * time.Second):
		t.Fatal("no exit within 5 s of SIGTERM")
	}
	took := time.Since(sent)
	code := n.cmd.ProcessState.ExitCode()
	report(t, "SIGTERM during a slow scrape: exit %d after %v", code, took.Round(time.Millisecond))
	if took > 2*time.Second || code != 0 {
		t.Errorf("exit %d after %v, want 0 within 2 s", code, took)
	}
	<-scraped
	deadline := time.Now().Add(3 * time.Second)
	for len(leftBehind(m)) > 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if left := leftBehind(m); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
	if pin == "" {
		t.Log("not root: the pinned maps are not checked")
		return
	}
	before := pinnedInodes(pin)
	if len(before) == 0 {
		t.Fatalf("no pinned map under %s after SIGTERM", pin)
	}
	// The programs stay attached while no jobscope runs (pinned links).
	linksBefore := pinnedLinks(pin)
	if len(linksBefore) < 2 {
		t.Errorf("pinned links after SIGTERM: %v, want the programs kept attached", linksBefore)
	}
	again := start(t, nil, args[:len(args)-4]...)
	again.mustScrape(5 * time.Second)
	after := pinnedInodes(pin)
	report(t, "pinned maps: %d kept after SIGTERM, reused by the restart; links %v handed over", len(before), linksBefore)
	for p, ino := range before {
		if after[p] != ino {
			t.Errorf("%s re-created by the restart", p)
		}
	}
	if got := pinnedLinks(pin); !slices.Equal(got, linksBefore) {
		t.Errorf("pinned links after the restart: %v, before: %v", got, linksBefore)
	}
}

// Overlapping scrapes in every order (8 at once, started at random times,
// --web.max-requests=8) on the v1 fixture node, whose files do not change:
// every scrape gives every counter the same value (none decreases, none is
// counted twice), the job with an OOM kill keeps its 1.
func TestOverlappingScrapes(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", "..", "testdata", "node-v1"))
	if err != nil {
		t.Fatal(err)
	}
	n := start(t, nil, "--path.cgroupfs="+filepath.Join(root, "cgroup"), "--path.procfs="+filepath.Join(root, "proc"),
		"--path.sysfs="+filepath.Join(root, "sys"), "--slurm.job-props-dir="+t.TempDir(), "--slurm.node-metadata.squeue=false",
		"--collector.ebpf=false", "--collector.gpu=false", "--collector.power=false", "--web.max-requests=8")
	first, _ := n.mustScrape(5 * time.Second)
	const oom = `slurm_job_memory_events_total{account="chemistry",event="oom_kill",jobid="3",user="bob"}`
	if first[oom] != 1 {
		t.Fatalf("fixture: %s is %v", oom, first[oom])
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	scrapes := 0
	for range 8 {
		wg.Go(func() {
			for range 15 {
				time.Sleep(time.Duration(rand.IntN(40)) * time.Millisecond)
				status, body, _ := n.scrape(5 * time.Second)
				mu.Lock()
				scrapes++
				if status != 200 {
					t.Errorf("status %d", status)
				} else if err := sameCounters(first, testutil.Samples(t, []byte(body))); err != nil {
					t.Error(err)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	report(t, "overlapping scrapes: %d scrapes 8 at a time, every counter equal to the first scrape's", scrapes)
}

func sameCounters(want, got map[string]float64) error {
	for k, v := range want {
		if len(k) > 6 && k[:6] == "slurm_" && got[k] != v {
			return fmt.Errorf("%s: %v, first scrape %v", k, got[k], v)
		}
	}
	return nil
}
