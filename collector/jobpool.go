// SPDX-License-Identifier: Apache-2.0

package collector

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/jobscope/jobscope/discovery"
)

// JobPool runs one collector's per-job reads. A read(2) of a procfs or
// cgroupfs file cannot be cancelled: one that blocks (a process whose mm
// lock is held, a FIFO planted in a tree) holds its goroutine and thread
// until the kernel lets go. So the reads run on the pool's goroutines, a
// fixed number started on first use and kept, never one per scrape; a scrape
// waits for each job only its share of the deadline, then leaves the job out
// and goes on with the others. The worker that is still stuck in the read is
// replaced, but only while fewer than size workers are stuck: a pool never
// has more than 2*size goroutines, whatever the number of scrapes. A job
// whose read is still stuck from an earlier scrape is not read again until
// it returns (it would only queue behind its own lock).
type JobPool struct {
	size int
	work chan *jobTask

	mu       sync.Mutex
	live     int // worker goroutines: idle, busy or stuck
	stuck    int
	inflight map[discovery.Key]bool // jobs whose read outlived its share
}

type jobTask struct {
	s       *Scrape
	job     *discovery.Job
	fn      func(j *discovery.Job, ch chan<- prometheus.Metric)
	metrics []prometheus.Metric
	done    chan struct{}
	late    bool // the scrape gave up on it (under JobPool.mu)
	ok      bool // fn returned (no panic)
}

// NewJobPool returns a pool of size workers (at least 1).
func NewJobPool(size int) *JobPool {
	size = max(size, 1)
	return &JobPool{size: size, work: make(chan *jobTask), inflight: map[discovery.Key]bool{}}
}

// Size is the number of jobs the pool reads at once.
func (p *JobPool) Size() int { return p.size }

// Workers is the number of the pool's goroutines alive, stuck ones
// included (tests).
func (p *JobPool) Workers() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.live
}

// spawn starts workers until size of them are free to take work, within
// the 2*size bound.
func (p *JobPool) spawn() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for p.live-p.stuck < p.size && p.live < 2*p.size {
		p.live++
		go p.worker()
	}
}

func (p *JobPool) worker() {
	for t := range p.work {
		p.run(t)
		// late is set and read under mu, after done is checked under it:
		// a task is either taken back by its scrape or marked late, never
		// both, never neither.
		p.mu.Lock()
		leave := false
		if t.late {
			p.stuck--
			delete(p.inflight, t.job.Key())
			// A replacement took this worker's place while it was stuck.
			leave = p.live-p.stuck > p.size
			if leave {
				p.live--
			}
		}
		p.mu.Unlock()
		if leave {
			return
		}
	}
}

// run calls the task's fn, collecting what it emits (only a job finished
// within its share reaches the scrape: a late one would write into a
// scrape that has ended).
func (p *JobPool) run(t *jobTask) {
	ch := make(chan prometheus.Metric, 64)
	drained := make(chan struct{})
	go func() {
		for m := range ch {
			t.metrics = append(t.metrics, m)
		}
		close(drained)
	}()
	t.ok = t.s.protect(func() { t.fn(t.job, ch) })
	close(ch)
	<-drained
	close(t.done)
}

// JobsRun is what EachJob did: jobs read, and jobs left out because their
// reads missed their share of the deadline.
type JobsRun struct {
	Done     int
	TimedOut []*discovery.Job
}

// Complete says every job was either read or timed out (so state kept
// between scrapes may be swept).
func (r JobsRun) Complete(jobs int) bool { return r.Done+len(r.TimedOut) == jobs }

// EachJob calls fn for each of the scrape's jobs on p's workers, up to
// p.Size() at once, and sends what fn emitted to ch. Each job has its share
// of what is left of the deadline (left × workers ÷ jobs not yet started,
// at least minShare);
// a job that misses it is left out of this scrape, logged once and counted
// as cause "job_timeout", and the other jobs go on: the collector's scrape
// still succeeds. A panic in fn costs that job only (as in Go).
func (s *Scrape) EachJob(p *JobPool, ch chan<- prometheus.Metric, fn func(j *discovery.Job, ch chan<- prometheus.Metric)) JobsRun {
	jobs := s.Jobs()
	var (
		next                  atomic.Int64
		mu                    sync.Mutex
		run                   JobsRun
		wg                    sync.WaitGroup
		deadline, hasDeadline = s.ctx.Deadline()
	)
	p.spawn()
	for range min(p.size, max(len(jobs), 1)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= len(jobs) || s.ctx.Err() != nil {
					return
				}
				j := jobs[i]
				out, ok := s.runJob(p, j, fn, share(deadline, hasDeadline, p.size, len(jobs)-i))
				mu.Lock()
				switch {
				case out == nil:
					run.TimedOut = append(run.TimedOut, j)
				case ok:
					run.Done++
				}
				mu.Unlock()
				for _, m := range out {
					ch <- m
				}
			}
		}()
	}
	wg.Wait()
	return run
}

// minShare is the least a job waits for, while half the deadline is left:
// a busy node (or a slow NFS-backed procfs read) can take a job's reads
// past its even share without anything being stuck, and leaving a job out
// is worse than a slower scrape.
const minShare = time.Second

// share is a job's time: what is left of the deadline, spread over the
// jobs not yet started, as many at once as there are workers, but at
// least minShare (or half of what is left, if less).
func share(deadline time.Time, ok bool, workers, left int) time.Duration {
	if !ok {
		return time.Hour
	}
	rest := time.Until(deadline)
	even := rest * time.Duration(workers) / time.Duration(max(left, 1))
	return min(rest, max(even, min(minShare, rest/2)))
}

// runJob runs fn for j on a worker within d. out is nil when the job
// timed out; ok is false when fn panicked.
func (s *Scrape) runJob(p *JobPool, j *discovery.Job, fn func(*discovery.Job, chan<- prometheus.Metric), d time.Duration) (out []prometheus.Metric, ok bool) {
	key := j.Key()
	p.mu.Lock()
	stuck, none := p.inflight[key], p.live == p.stuck
	p.mu.Unlock()
	if stuck {
		s.Problem("job_timeout", fmt.Errorf("job %s: its read from an earlier scrape is still blocked; left out", j.ID))
		return nil, false
	}
	if none { // every worker is stuck: waiting would only spend the deadline
		s.Problem("job_timeout", fmt.Errorf("job %s: every reader of this collector is blocked in a read; left out", j.ID))
		return nil, false
	}
	t := &jobTask{s: s, job: j, fn: fn, done: make(chan struct{})}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case p.work <- t:
	case <-timer.C:
		s.Problem("job_timeout", fmt.Errorf("job %s: no free reader within its %s share of the scrape deadline; left out", j.ID, d.Round(time.Millisecond)))
		return nil, false
	}
	select {
	case <-t.done:
		return t.metrics, t.ok
	case <-timer.C:
	}
	p.mu.Lock()
	select {
	case <-t.done: // finished as the timer fired
		p.mu.Unlock()
		return t.metrics, t.ok
	default:
	}
	t.late = true
	p.stuck++
	p.inflight[key] = true
	p.mu.Unlock()
	p.spawn()
	s.Problem("job_timeout", fmt.Errorf("job %s: its files took longer than its %s share of the scrape deadline; left out", j.ID, d.Round(time.Millisecond)))
	return nil, false
}
