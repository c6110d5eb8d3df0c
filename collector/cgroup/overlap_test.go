package cgroup

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

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

// pauser stops a scrape at the open of one file until the test lets it go.
type pauser struct {
	mu      sync.Mutex
	path    string
	on      bool
	arrived chan chan struct{}
}

func (p *pauser) fault(path string) error {
	p.mu.Lock()
	hit := p.on && path == p.path
	p.mu.Unlock()
	if hit {
		release := make(chan struct{})
		p.arrived <- release
		<-release
	}
	return nil
}

func (p *pauser) set(on bool) {
	p.mu.Lock()
	p.on = on
	p.mu.Unlock()
}

// Two scrapes that overlap, in every order: the v1 OOM count that ended
// steps left behind never goes down and is never counted twice. Before the
// job-state store, whichever scrape ended first advanced a generation and
// the other swept the job's remainder away: 5 fell to 0.
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
			_ = os.WriteFile(filepath.Join(pids, "pids.current"), []byte("3\n"), 0o644)
			p := &pauser{path: filepath.Join(pids, "pids.current"), arrived: make(chan chan struct{})}
			r := newBadRunV1(t, root, p.fault)
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
			p.set(true)
			type run struct {
				release chan struct{}
				done    chan string
			}
			runs := map[string]*run{}
			var seen []string
			for _, ev := range order {
				name, what, _ := strings.Cut(ev, ".")
				if what == "mid" {
					rn := &run{done: make(chan string, 1)}
					runs[name] = rn
					go func() { rn.done <- oom(r.scrape(t)) }()
					rn.release = <-p.arrived
					continue
				}
				rn := runs[name]
				close(rn.release)
				seen = append(seen, name+"="+<-rn.done)
			}
			p.set(false)
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

// A panic in one of the collector's worker goroutines (here: while reading
// one job's file) is recovered, counted as cause "panic", and costs that
// collector's success only: the scrape answers, the other job is whole.
func TestWorkerPanicKeepsScrape(t *testing.T) {
	root := badNode(t)
	boom := filepath.Join(root, job100, "memory.stat")
	r := newBadRun(t, root, func(p string) error {
		if p == boom {
			panic("worker panic")
		}
		return nil
	})
	out := r.scrape(t)
	if !strings.Contains(out, `jobscope_scrape_collector_success{collector="cgroup"} 0`) {
		t.Errorf("cgroup success after a worker panic:\n%s", out)
	}
	if got := r.problems.Count("cgroup", "panic"); got != 1 {
		t.Errorf("panic counted %v times, want 1", got)
	}
	if countSeries(out, `slurm_job_memory_usage_bytes{account="chemistry",jobid="101"`) != 1 {
		t.Error("the other job lost its series")
	}
	if n := strings.Count(r.logs.String(), "cause=panic"); n != 1 {
		t.Errorf("panic logged %d times, want once", n)
	}
}
