// SPDX-License-Identifier: Apache-2.0

package slurmcli

import (
	"io"
	"strings"
	"time"
)

// SacctJob is one ended job from sacct: one job, or the unstarted tasks
// of an array that ended together (cancelled while pending), which sacct
// prints as one record "8_[2-3]" standing for Count tasks.
type SacctJob struct {
	ID        string // JobIDRaw
	JobID     string // as sacct shows it: "7", "7_2", "8_[2-3]"; may be empty
	State     string // lower case, first word ("cancelled" for "CANCELLED by 1001")
	Partition string
	Account   string
	Submit    string // as sacct printed it; empty where not asked for
	End       string // as sacct printed it
	Count     int
}

// sacctFormat lists the columns asked for; the header names them back.
const sacctFormat = "JobID,JobIDRaw,State,Partition,Account,Submit,End"

// sacctStates are the final states: sacct then selects jobs by their end
// time within -S/-E.
const sacctStates = "BF,CA,CD,DL,F,NF,OOM,PR,TO"

// ParseSacct reads `sacct -a -X -P --format=...` output with its header.
// Columns are found by name: JobIDRaw, State and End are needed, the
// others are read where present.
func ParseSacct(r io.Reader) ([]SacctJob, error) {
	rows, err := pipeTable(r, "sacct", "JobIDRaw", "State", "End")
	if err != nil {
		return nil, err
	}
	out := make([]SacctJob, 0, len(rows))
	for _, row := range rows {
		get := row.trimmed
		state, _, _ := strings.Cut(get("State"), " ")
		j := SacctJob{
			ID: get("JobIDRaw"), JobID: get("JobID"), State: strings.ToLower(state), Partition: Clean(get("Partition")),
			Account: Clean(get("Account")), Submit: get("Submit"), End: get("End"), Count: 1,
		}
		if _, tasks, ok := sacctArrayRange(j.JobID); ok {
			j.Count = ArrayTaskCount(tasks)
		}
		out = append(out, j)
	}
	return out, nil
}

// sacctArrayRange splits "8_[2-3]" (unstarted tasks, optionally with a
// "%N" limit inside the brackets) into "8" and "2-3".
func sacctArrayRange(jobID string) (arrayJob, tasks string, ok bool) {
	base, rest, found := strings.Cut(jobID, "_[")
	if !found || !strings.HasSuffix(rest, "]") {
		return "", "", false
	}
	return base, strings.TrimSuffix(rest, "]"), true
}

// EndKey groups ended jobs.
type EndKey struct{ State, Partition, Account string }

// SacctCounter counts ended jobs since a start time with incremental sacct
// queries: each poll asks only for jobs that ended since the previous one
// (plus an overlap for records slurmdbd stores late), so slurmdbd's load
// stays flat however long jobscope runs. Jobs are counted once: those seen
// in the overlap are remembered by id and end time. A start far back is
// caught up in windows of at most maxWindow, one per poll, so no single
// query asks slurmdbd for days of jobs.
type SacctCounter struct {
	since     time.Time
	overlap   time.Duration
	maxWindow time.Duration
	loc       *time.Location

	next   time.Time            // start of the next window
	seen   map[string]time.Time // "id|end" of jobs counted in the overlap
	counts map[EndKey]float64
	stats  SacctStats
	// ended, when set, gets every successful query's records (the
	// submitted-jobs counter takes the jobs squeue never saw from them).
	ended func(jobs []SacctJob, loc *time.Location, now time.Time)
}

// SacctStats is what the incremental queries cost slurmdbd so far.
type SacctStats struct {
	Queries float64 // successful queries
	Records float64 // records they returned
	// Window is the span the latest query asked for; Behind is how far
	// its end lies before the poll time (catching up a long --since).
	Window, Behind time.Duration
}

// SacctCounts is the sacct source's value: ended jobs by key, and the
// queries' cost.
type SacctCounts struct {
	Ended map[EndKey]float64
	Stats SacctStats
}

// NewSacctCounter counts jobs that end at or after since. overlap is how
// late slurmdbd may store a record and still be counted; maxWindow bounds
// one query's span (0: no bound); loc is the time zone sacct prints and
// reads times in (the exporter's, which it inherits).
func NewSacctCounter(since time.Time, overlap, maxWindow time.Duration, loc *time.Location) *SacctCounter {
	if loc == nil {
		loc = time.Local
	}
	return &SacctCounter{since: since, overlap: overlap, maxWindow: maxWindow, loc: loc, next: since,
		seen: map[string]time.Time{}, counts: map[EndKey]float64{}}
}

// OnEnded hands every successful query's records to f as well.
func (s *SacctCounter) OnEnded(f func(jobs []SacctJob, loc *time.Location, now time.Time)) {
	s.ended = f
}

const sacctTime = "2006-01-02T15:04:05"

// window returns the query's bounds and arguments for a poll at now.
func (s *SacctCounter) window(now time.Time) (from, to time.Time, args []string) {
	to = now.Truncate(time.Second)
	from = s.next.Add(-s.overlap)
	if from.Before(s.since) {
		from = s.since
	}
	if s.maxWindow > 0 && to.Sub(from) > s.maxWindow+s.overlap {
		to = from.Add(s.maxWindow + s.overlap)
	}
	args = []string{"-a", "-X", "-P", "-s", sacctStates,
		"-S", from.In(s.loc).Format(sacctTime), "-E", to.In(s.loc).Format(sacctTime),
		"--format=" + sacctFormat}
	return from, to, args
}

// add counts the jobs of a successful query for [from, to) made at now and
// moves the next window on. Jobs ending at or after to wait for the next
// poll.
func (s *SacctCounter) add(jobs []SacctJob, from, to, now time.Time) {
	for _, j := range jobs {
		end, err := time.ParseInLocation(sacctTime, j.End, s.loc)
		if err != nil || end.Before(from) || end.Before(s.since) || !end.Before(to) {
			continue
		}
		k := j.ID + "|" + j.JobID + "|" + j.End
		if _, dup := s.seen[k]; dup {
			continue
		}
		s.seen[k] = end
		s.counts[EndKey{j.State, j.Partition, j.Account}] += float64(max(j.Count, 1))
	}
	s.next = to
	for k, end := range s.seen {
		if end.Before(to.Add(-s.overlap)) {
			delete(s.seen, k)
		}
	}
	s.stats.Queries++
	s.stats.Records += float64(len(jobs))
	s.stats.Window, s.stats.Behind = to.Sub(from), max(now.Truncate(time.Second).Sub(to), 0)
	if s.ended != nil {
		s.ended(jobs, s.loc, now)
	}
}

// Counts copies the totals.
func (s *SacctCounter) Counts() SacctCounts {
	out := make(map[EndKey]float64, len(s.counts))
	for k, v := range s.counts {
		out[k] = v
	}
	return SacctCounts{Ended: out, Stats: s.stats}
}
