// SPDX-License-Identifier: Apache-2.0

package adversarial

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// slimJob copies the job-level files of a generated job (no step
// directories): what a job directory holds for the collectors to read.
func slimJob(src, dst string) error {
	tmp := dst + ".tmp"
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return err
	}
	entries, err := os.ReadDir(src)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(tmp, e.Name()), b, 0o644); err != nil {
			return err
		}
	}
	return os.Rename(tmp, dst)
}

// churnRound starts jobs at 50 a second, each gone 10 s later, for 30 s,
// while Prometheus scrapes every second; then every job ends. It returns
// the jobs started and the most alive at once.
func churnRound(t *testing.T, n *node, root, template string, first int) (jobs, peak int) {
	t.Helper()
	stop := make(chan struct{})
	made := make(chan int)
	go func() {
		count := 0
		tick := time.NewTicker(20 * time.Millisecond) // 50 a second
		defer tick.Stop()
		born := map[int]time.Time{}
		for i := first; ; i++ {
			select {
			case <-stop:
				for j := range born {
					_ = os.RemoveAll(jobDir(root, j))
				}
				made <- count
				return
			case now := <-tick.C:
				if slimJob(template, jobDir(root, i)) == nil {
					count++
					born[i] = now
				}
				for j, b := range born {
					if now.Sub(b) > 10*time.Second {
						_ = os.RemoveAll(jobDir(root, j))
						delete(born, j)
					}
				}
			}
		}
	}()
	end := time.Now().Add(30 * time.Second)
	for time.Now().Before(end) {
		s, _ := n.mustScrape(5 * time.Second)
		peak = max(peak, count(s, "slurm_job_info"))
		time.Sleep(time.Second)
	}
	close(stop)
	return <-made, peak
}

// settle scrapes past StateGrace scrapes, so that every per-job value of
// the ended jobs is swept, and returns the last scrape and the RSS.
func settle(t *testing.T, n *node) (map[string]float64, int) {
	t.Helper()
	var s map[string]float64
	for range 5 {
		s, _ = n.mustScrape(5 * time.Second)
		time.Sleep(time.Second)
	}
	return s, rssKiB(t, n.cmd.Process.Pid)
}

// Churn: for 30 s jobs start at 50 a second and each is gone 10 s later
// (500 alive at the peak) while Prometheus scrapes every second; scaled for
// CI from the 5 minutes of 20 s lifetimes. Once the jobs have ended,
// none is exported and the series count is the empty node's; a minute
// later (discovery keeps a job's metadata that long after its last
// sighting, for overlapping scrapes) every per-job store is empty: the heap
// is within 10% (+1 MiB) of the empty node's, and so is RSS (+4 MiB: the Go
// runtime returns heap pages to the kernel lazily).
func TestChurn(t *testing.T) {
	root, args := tree(t, 0)
	spare, _ := tree(t, 1)
	// A frequent GC makes the heap's allocated bytes track what is live.
	n := start(t, []string{"GOGC=25"}, args...)
	base, baseRSS := settle(t, n)
	baseHeap := base["go_memstats_alloc_bytes"]
	jobs, peak := churnRound(t, n, root, jobDir(spare, 0), 0)
	after, rss := settle(t, n)
	report(t, "churn: %d jobs in 30 s (peak %d alive); series %d (empty node %d); heap %.1f MiB (empty node %.1f MiB); RSS %d KiB (empty node %d KiB)",
		jobs, peak, len(after), len(base), after["go_memstats_alloc_bytes"]/(1<<20), baseHeap/(1<<20), rss, baseRSS)
	if c := count(after, "slurm_job_info"); c != 0 {
		t.Errorf("%d jobs still exported after every job ended", c)
	}
	if float64(len(after)) > 1.1*float64(len(base)) {
		t.Errorf("%d series after churn, %d before", len(after), len(base))
	}
	// The heap counts garbage until the next collection, and an idle
	// process may collect only at the runtime's forced GC (every 2 min):
	// wait up to 2.5 min for both to be back, scraping every 5 s.
	var heap float64
	waited := time.Now()
	for range 30 {
		time.Sleep(5 * time.Second)
		last, _ := n.mustScrape(5 * time.Second)
		heap, rss = last["go_memstats_alloc_bytes"], rssKiB(t, n.cmd.Process.Pid)
		if time.Since(waited) > time.Minute && heap <= 1.1*baseHeap+(1<<20) && float64(rss) <= 1.1*float64(baseRSS)+4096 {
			break
		}
	}
	report(t, "churn, %v later: heap %.1f MiB (empty node %.1f MiB), RSS %d KiB (empty node %d KiB)", time.Since(waited).Round(time.Second), heap/(1<<20), baseHeap/(1<<20), rss, baseRSS)
	if heap > 1.1*baseHeap+(1<<20) {
		t.Errorf("heap %.1f MiB %v after churn, empty node %.1f MiB", heap/(1<<20), time.Since(waited).Round(time.Second), baseHeap/(1<<20))
	}
	if float64(rss) > 1.1*float64(baseRSS)+4096 {
		t.Errorf("RSS %d KiB a minute after churn, empty node %d KiB", rss, baseRSS)
	}
}
