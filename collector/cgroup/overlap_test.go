// SPDX-License-Identifier: Apache-2.0

package cgroup

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/jobscope/jobscope/internal/testutil"
)

// interleavings lists every order of two scrapes' events, each scrape going
// "<name>.mid" (paused inside the scrape, after its per-job state was
// used) then "<name>.end".
func interleavings() [][]string {
	var out [][]string
	var walk func(a, b int, acc []string)
	ev := func(s string, i int) string { return s + [2]string{".mid", ".end"}[i] }
	walk = func(a, b int, acc []string) {
		if a == 2 && b == 2 {
			out = append(out, append([]string(nil), acc...))
			return
		}
		if a < 2 {
			walk(a+1, b, append(acc, ev("A", a)))
		}
		if b < 2 {
			walk(a, b+1, append(acc, ev("B", b)))
		}
	}
	walk(0, 0, nil)
	return out
}

// pauser makes each scrape stop at the open of one file until the test
// lets it go: the file is a FIFO, fresh for each scrape, whose open waits
// for the test to open its other end, and whose read waits for the test to
// write.
type pauser struct {
	t    *testing.T
	path string
}

// arrive starts scrape and returns once it waits at the file; the returned
// func lets it read the file ("3") and finish.
func (p *pauser) arrive(scrape func()) (release func()) {
	p.t.Helper()
	// A fresh FIFO: a scrape already paused keeps the one it opened.
	if err := os.Remove(p.path); err != nil && !os.IsNotExist(err) {
		p.t.Fatal(err)
	}
	if err := unix.Mkfifo(p.path, 0o644); err != nil {
		p.t.Fatal(err)
	}
	go scrape()
	w, err := os.OpenFile(p.path, os.O_WRONLY, 0) // returns once the scrape opens it
	if err != nil {
		p.t.Fatal(err)
	}
	return func() {
		if _, err := w.WriteString("3\n"); err != nil {
			p.t.Error(err)
		}
		w.Close()
	}
}

// plain puts a regular file back, for scrapes that do not pause.
func (p *pauser) plain() {
	p.t.Helper()
	_ = os.Remove(p.path)
	if err := os.WriteFile(p.path, []byte("3\n"), 0o644); err != nil {
		p.t.Fatal(err)
	}
}

// Two scrapes that overlap, in every order: the v1 OOM count that ended
// steps left behind never goes down and is never counted twice. Before the
// job-state store, whichever scrape ended first advanced a generation and
// the other swept the job's remainder away: 5 fell to 0. The exporter now
// runs one collection at a time, but a collection cut short by its deadline
// can still overlap the next, so the runs here drive the collector itself.
func TestOverlappingScrapesKeepV1Events(t *testing.T) {
	for _, order := range interleavings() {
		t.Run(strings.Join(order, ","), func(t *testing.T) {
			root := t.TempDir()
			testutil.CopyTree(t, filepath.Join("..", "..", "testdata", "node-v1"), root)
			job := filepath.Join(root, "cgroup", "memory", "slurm_vm", "uid_1002", "job_3")
			task := filepath.Join(job, "step_batch", "task_0", "memory.oom_control")
			if err := os.WriteFile(task, []byte("oom_kill_disable 0\nunder_oom 0\noom_kill 5\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			// A pids directory whose pids.current is the job's last file read,
			// after its events were accounted.
			pids := filepath.Join(root, "cgroup", "pids", "slurm_vm", "uid_1002", "job_3")
			if err := os.MkdirAll(pids, 0o755); err != nil {
				t.Fatal(err)
			}
			p := &pauser{t: t, path: filepath.Join(pids, "pids.current")}
			p.plain()
			r := newBadRunV1(t, root)
			oom := func(out string) string {
				for _, l := range strings.Split(out, "\n") {
					if strings.HasPrefix(l, `slurm_job_memory_events_total{account="chemistry",event="oom_kill",jobid="3"`) {
						return l[strings.LastIndex(l, " ")+1:]
					}
				}
				return "absent"
			}
			if got := oom(r.scrape(t)); got != "5" {
				t.Fatalf("before: got %s, want 5", got)
			}
			if err := os.RemoveAll(filepath.Join(job, "step_batch")); err != nil {
				t.Fatal(err)
			}
			type run struct {
				release func()
				done    chan string
			}
			runs := map[string]*run{}
			var seen []string
			for _, ev := range order {
				name, what, _ := strings.Cut(ev, ".")
				if what == "mid" {
					rn := &run{done: make(chan string, 1)}
					runs[name] = rn
					rn.release = p.arrive(func() { rn.done <- oom(r.collectOnce(t)) })
					continue
				}
				rn := runs[name]
				rn.release()
				seen = append(seen, name+"="+<-rn.done)
			}
			p.plain()
			seen = append(seen, "after="+oom(r.scrape(t)))
			for _, s := range seen {
				if !strings.HasSuffix(s, "=5") {
					t.Errorf("OOM kills of ended steps, in the order scrapes ended: %v; want 5 throughout", seen)
					break
				}
			}
		})
	}
}
