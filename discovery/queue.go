// SPDX-License-Identifier: Apache-2.0

package discovery

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/jobscope/jobscope/slurmcli"
)

// QueueRequest is what one background squeue asks for.
type QueueRequest struct {
	Nodes []string // Slurm node names whose jobs to list
	SLUID bool     // a SLUID directory waits for its job id: the answer must carry SLUIDs
}

// QueueStatus is the state of the background squeue, for metrics and the
// landing page.
type QueueStatus struct {
	Enabled bool
	Runs    float64
	Errors  map[string]float64 // by cause (timeout, exit, start, parse, ...)
	// Up is 1 when the latest run succeeded, 0 when it failed, -1 before
	// the first run.
	Up          int
	LastSuccess time.Time
	// Backoff is the wait before the next run after failures (0 while it
	// works).
	Backoff time.Duration
	Jobs    int // jobs in the latest good answer
	// Running is when the run in flight started (zero: none).
	Running time.Time
}

// queue runs the metadata squeue in the background: at most one run at a
// time, at most one per interval, only while some job waits for metadata,
// and with a doubling wait after each failure. Discover only reads its
// latest answer, so a hung slurmctld never slows a scrape.
type queue struct {
	run                           func(ctx context.Context, req QueueRequest) ([]slurmcli.NodeJob, error)
	interval, timeout, maxBackoff time.Duration
	now                           func() time.Time
	log                           *slog.Logger

	base   context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu       sync.Mutex
	byID     map[string]slurmcli.NodeJob
	bySLUID  map[string]string
	running  bool
	next     time.Time
	failures int // in a row
	st       QueueStatus
	// answeredFrom is when the run of the latest good answer started: an
	// answer knows the jobs whose directories existed then.
	answeredFrom time.Time
}

func newQueue(cfg Config, log *slog.Logger) *queue {
	base, cancel := context.WithCancel(context.Background())
	return &queue{
		run: cfg.Queue, interval: cfg.QueueInterval, timeout: cfg.QueueTimeout, maxBackoff: cfg.QueueMaxBackoff,
		now: cfg.Now, log: log, base: base, cancel: cancel,
		st: QueueStatus{Enabled: true, Up: -1, Errors: map[string]float64{}},
	}
}

// lookup returns the latest answer's record of a job id.
func (q *queue) lookup(id string) (slurmcli.NodeJob, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	j, ok := q.byID[id]
	return j, ok
}

// idOf returns the job id the latest answer gives a SLUID.
func (q *queue) idOf(sluid string) string {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.bySLUID[sluid]
}

// want starts a run in the background unless one is running, the interval
// (or the backoff after a failure) has not passed, or the queue is closed.
func (q *queue) want(req QueueRequest) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.running || q.now().Before(q.next) || q.base.Err() != nil || len(req.Nodes) == 0 {
		return
	}
	q.running = true
	q.st.Running = q.now()
	q.wg.Add(1)
	go q.runOnce(req, q.st.Running)
}

func (q *queue) runOnce(req QueueRequest, started time.Time) {
	defer q.wg.Done()
	ctx, cancel := context.WithTimeout(q.base, q.timeout)
	jobs, err := q.run(ctx, req)
	cancel()
	q.mu.Lock()
	defer q.mu.Unlock()
	q.running = false
	q.st.Running = time.Time{}
	if q.base.Err() != nil {
		return // shutting down: the kill was ours
	}
	now := q.now()
	q.st.Runs++
	var refused *slurmcli.RefusedError
	if errors.As(err, &refused) {
		// A good answer less some records (a job name made to look like
		// squeue's output, say): those jobs keep the metadata the node
		// has; the rest is used. The command runner logged it once.
		q.st.Errors[slurmcli.CauseRecord] += float64(refused.Records)
		err = nil
	}
	if err != nil {
		q.failures++
		backoff := q.interval << min(q.failures, 16)
		if backoff <= 0 || backoff > q.maxBackoff {
			backoff = q.maxBackoff
		}
		q.next = now.Add(backoff)
		q.st.Up, q.st.Backoff = 0, backoff
		q.st.Errors[slurmcli.ErrorCause(err)]++
		if q.failures == 1 {
			q.log.Warn("squeue for job metadata failed: jobs are still exported at once, with the metadata the node has; retrying with backoff (logged once per outage)",
				"nodes", req.Nodes, "err", err, "retry_in", backoff)
		}
		return
	}
	if q.failures > 0 {
		q.log.Info("squeue for job metadata answers again", "failed_runs", q.failures)
	}
	q.failures = 0
	q.next = now.Add(q.interval)
	q.byID = make(map[string]slurmcli.NodeJob, len(jobs))
	q.bySLUID = map[string]string{}
	for _, j := range jobs {
		q.byID[j.ID] = j
		if j.SLUID != "" {
			q.bySLUID[j.SLUID] = j.ID
		}
	}
	q.st.Up, q.st.Backoff, q.st.LastSuccess, q.st.Jobs = 1, 0, now, len(jobs)
	q.answeredFrom = started
}

// answered says whether a good answer has come from a run that started at
// or after since (a job first seen then is in it, if slurmctld knows it).
func (q *queue) answered(since time.Time) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return !q.answeredFrom.IsZero() && !q.answeredFrom.Before(since)
}

// due says whether squeue is answering (its latest run succeeded) and the
// answer for a job first seen at since is still to come: squeue is then
// expected to give the job's identity within the hold time.
func (q *queue) due(since time.Time) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.st.Up == 1 && q.answeredFrom.Before(since)
}

func (q *queue) status() QueueStatus {
	q.mu.Lock()
	defer q.mu.Unlock()
	st := q.st
	st.Errors = make(map[string]float64, len(q.st.Errors))
	for k, v := range q.st.Errors {
		st.Errors[k] = v
	}
	return st
}

// close stops a running squeue (its process group is killed) and waits
// for it.
func (q *queue) close() {
	q.cancel()
	q.wg.Wait()
}
