// SPDX-License-Identifier: Apache-2.0

package service

import (
	"context"
	"errors"
	"fmt"
	"os/user"
	"strconv"
	"sync"
	"time"

	"github.com/jobscope/jobscope/slurmcli"
)

// Caller is who asks, as Slurm sees it.
type Caller struct {
	UID  int // -1 for a browser user named by the proxy
	Name string
	// Root is uid 0 proven by MUNGE.
	Root bool
	// Privileged: a Slurm operator or administrator.
	Privileged  bool
	Coordinates map[string]bool
}

// all says whether the caller may read every job and summary.
func (c Caller) all() bool { return c.Root || c.Privileged }

// Refusal is a request that Slurm's rules do not allow, or whose answer
// depends on a Slurm that did not answer. Reason labels the counter.
type Refusal struct {
	Status int
	Reason string
	Msg    string
}

func (e *Refusal) Error() string { return e.Msg }

// Reasons of the decision counter beyond the munge ones.
const (
	reasonForbidden   = "forbidden"
	reasonUnknownJob  = "unknown_job"
	reasonSlurm       = "slurm_unavailable"
	reasonBadRequest  = "bad_request"
	reasonUntrusted   = "untrusted_proxy"
	reasonBadUser     = "bad_user"
	reasonOverloaded  = "overloaded"
	reasonReportError = "report_failed"
)

// Access answers who may read what, from Slurm: a job's owner and account
// from sacct, a caller's admin level and coordinated accounts from
// sacctmgr, names from the system's user database. Answers are kept for
// TTL; failures are not kept (the next request asks again).
type Access struct {
	Slurm   *slurmcli.Runner
	Cluster string
	TTL     time.Duration
	// LookupID names a uid (user.LookupId; tests replace it).
	LookupID func(string) (*user.User, error)
	Now      func() time.Time

	mu    sync.Mutex
	users map[string]cached[slurmcli.SlurmUser]
	jobs  map[string]cached[[]slurmcli.SacctRecord]
}

type cached[T any] struct {
	v    T
	when time.Time
}

// maxCached bounds each cache: a flood of distinct job ids empties it
// rather than growing it.
const maxCached = 10000

func (a *Access) now() time.Time {
	if a.Now != nil {
		return a.Now()
	}
	return time.Now()
}

func getCached[T any](a *Access, m map[string]cached[T], k string) (T, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	e, ok := m[k]
	if !ok || a.now().Sub(e.when) >= a.TTL {
		var zero T
		return zero, false
	}
	return e.v, true
}

func putCached[T any](a *Access, m *map[string]cached[T], k string, v T) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if *m == nil || len(*m) >= maxCached {
		*m = make(map[string]cached[T])
	}
	(*m)[k] = cached[T]{v, a.now()}
}

// CallerByUID is the caller munged vouched for. A uid the user database
// cannot name gets "#<uid>", which no Slurm user equals: such a caller
// sees nobody's jobs (root still sees all).
func (a *Access) CallerByUID(ctx context.Context, uid int) (Caller, error) {
	lookup := a.LookupID
	if lookup == nil {
		lookup = user.LookupId
	}
	name := "#" + strconv.Itoa(uid)
	if u, err := lookup(strconv.Itoa(uid)); err == nil && slurmcli.ValidUserName(u.Username) {
		name = u.Username
	}
	c := Caller{UID: uid, Name: name, Root: uid == 0}
	if c.Root || name[0] == '#' {
		return c, nil
	}
	return a.withRoles(ctx, c)
}

// CallerByName is the browser user a trusted proxy named.
func (a *Access) CallerByName(ctx context.Context, name string) (Caller, error) {
	if !slurmcli.ValidUserName(name) {
		return Caller{}, &Refusal{400, reasonBadUser, "the proxy's user name is not a user name"}
	}
	return a.withRoles(ctx, Caller{UID: -1, Name: name})
}

func (a *Access) withRoles(ctx context.Context, c Caller) (Caller, error) {
	u, ok := getCached(a, a.users, c.Name)
	if !ok {
		var err error
		u, _, err = slurmcli.LookupSlurmUser(ctx, a.Slurm, c.Name)
		if err != nil {
			return c, &Refusal{503, reasonSlurm, "Slurm accounting (sacctmgr) did not answer: " + err.Error()}
		}
		putCached(a, &a.users, c.Name, u)
	}
	c.Privileged = u.Privileged()
	c.Coordinates = make(map[string]bool, len(u.Coordinates))
	for _, acct := range u.Coordinates {
		c.Coordinates[acct] = true
	}
	return c, nil
}

// JobAccess is what MayReadJob found: whether the caller owns every job
// behind the id, and the cluster Slurm's answer was about.
type JobAccess struct {
	Owner bool
	// Cluster pins the report to the cluster sacct answered for: a
	// Prometheus that holds several clusters may hold another user's job
	// under the same id, which this check never saw. Empty for callers
	// who may read every job (sacct is not asked for them).
	Cluster string
}

// MayReadJob allows the job's owner, a coordinator of its account, Slurm
// operators and administrators, and root; the owner and account are
// sacct's, never a metric label (which the job's environment may have
// written). An id that names several jobs (reused) needs the right to
// read each of them.
//
// A caller who may not read the job gets the same answer whether the job
// exists or not (only the counter's reason differs): job ids are not
// secret under Slurm's defaults, but under PrivateData=jobs Slurm itself
// hides other users' jobs, and the service should not be an oracle for them.
func (a *Access) MayReadJob(ctx context.Context, c Caller, id string) (JobAccess, error) {
	if c.all() {
		return JobAccess{}, nil
	}
	recs, ok := getCached(a, a.jobs, id)
	if !ok {
		var err error
		recs, err = slurmcli.SacctRecords(ctx, a.Slurm, id, a.Cluster, time.Local)
		if slurmcli.Partial(err) {
			// A record left out may be a job the caller may not read:
			// only a whole answer decides.
			return JobAccess{}, &Refusal{503, reasonSlurm, fmt.Sprintf("job %s: Slurm's answer could not be read whole", id)}
		}
		if err != nil {
			if errors.Is(err, slurmcli.ErrTimeout) || isExit(err) {
				return JobAccess{}, &Refusal{503, reasonSlurm, "Slurm accounting (sacct) did not answer"}
			}
			return JobAccess{}, &Refusal{400, reasonBadRequest, fmt.Sprintf("job %s: %v", id, err)}
		}
		putCached(a, &a.jobs, id, recs)
	}
	notYours := func(reason string) (JobAccess, error) {
		return JobAccess{}, &Refusal{404, reason, fmt.Sprintf("job %s: Slurm accounting lists no job of that id "+
			"that %s may read (its own, or of the accounts it coordinates)", id, c.Name)}
	}
	if len(recs) == 0 {
		return notYours(reasonUnknownJob)
	}
	acc := JobAccess{Owner: true, Cluster: a.Cluster}
	for _, r := range recs {
		acc.Owner = acc.Owner && r.User == c.Name
		if r.User != c.Name && !c.Coordinates[r.Account] {
			return notYours(reasonForbidden)
		}
		if acc.Cluster == "" {
			acc.Cluster = r.Cluster
		}
		if r.Cluster != acc.Cluster {
			// sacct without -M answers for one cluster; two in one
			// answer cannot be pinned to either.
			return JobAccess{}, &Refusal{503, reasonSlurm, fmt.Sprintf("job %s: sacct answered for several clusters: "+
				"set report.cluster", id)}
		}
	}
	if acc.Cluster == "" {
		return JobAccess{}, &Refusal{503, reasonSlurm, fmt.Sprintf("job %s: sacct named no cluster: set report.cluster", id)}
	}
	return acc, nil
}

// MayReadUsage: a user's own summary; an account's for its coordinators;
// anything for operators, administrators and root.
func (a *Access) MayReadUsage(c Caller, userF, account, partition string) error {
	switch {
	case c.all():
		return nil
	case account != "" && c.Coordinates[account]:
		return nil
	case userF == c.Name:
		return nil
	}
	return &Refusal{403, reasonForbidden, fmt.Sprintf("%s may read its own usage (--user %s) and that of the "+
		"accounts it coordinates", c.Name, c.Name)}
}

func isExit(err error) bool {
	var ee *slurmcli.ExitError
	return errors.As(err, &ee)
}
