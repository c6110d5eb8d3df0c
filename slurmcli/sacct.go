package slurmcli

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// SacctJob is one ended job from sacct.
type SacctJob struct {
	ID        string // JobIDRaw
	State     string // lower case, first word ("cancelled" for "CANCELLED by 1001")
	Partition string
	Account   string
	End       string // as sacct printed it
}

// sacctFormat lists the columns asked for; the header names them back.
const sacctFormat = "JobIDRaw,State,Partition,Account,End"

// sacctStates are the final states: sacct then selects jobs by their end
// time within -S/-E.
const sacctStates = "BF,CA,CD,DL,F,NF,OOM,PR,TO"

// ParseSacct reads `sacct -a -X -P --format=...` output with its header.
func ParseSacct(r io.Reader) ([]SacctJob, error) {
	rows, err := pipeTable(r, "sacct", "JobIDRaw", "State", "End")
	if err != nil {
		return nil, err
	}
	out := make([]SacctJob, 0, len(rows))
	for _, row := range rows {
		get := row.trimmed
		state, _, _ := strings.Cut(get("State"), " ")
		out = append(out, SacctJob{
			ID: get("JobIDRaw"), State: strings.ToLower(state), Partition: Clean(get("Partition")),
			Account: Clean(get("Account")), End: get("End"),
		})
	}
	return out, nil
}

// EndKey groups ended jobs.
type EndKey struct{ State, Partition, Account string }

// SacctCounter counts ended jobs since a start time with incremental sacct
// queries: each poll asks only for jobs that ended since the previous one
// (plus an overlap for records slurmdbd stores late), so slurmdbd's load
// stays flat however long jobscope runs. Jobs are counted once: those seen
// in the overlap are remembered by id and end time.
type SacctCounter struct {
	since   time.Time
	overlap time.Duration
	loc     *time.Location

	next   time.Time            // start of the next window
	seen   map[string]time.Time // "id|end" of jobs counted in the overlap
	counts map[EndKey]float64
}

// NewSacctCounter counts jobs that end at or after since. overlap is how
// late slurmdbd may store a record and still be counted; loc is the time
// zone sacct prints and reads times in (the exporter's, which it inherits).
func NewSacctCounter(since time.Time, overlap time.Duration, loc *time.Location) *SacctCounter {
	if loc == nil {
		loc = time.Local
	}
	return &SacctCounter{since: since, overlap: overlap, loc: loc, next: since,
		seen: map[string]time.Time{}, counts: map[EndKey]float64{}}
}

const sacctTime = "2006-01-02T15:04:05"

// window returns the query's bounds and arguments for a poll at now.
func (s *SacctCounter) window(now time.Time) (from, to time.Time, args []string) {
	to = now.Truncate(time.Second)
	from = s.next.Add(-s.overlap)
	if from.Before(s.since) {
		from = s.since
	}
	args = []string{"-a", "-X", "-P", "-s", sacctStates,
		"-S", from.In(s.loc).Format(sacctTime), "-E", to.In(s.loc).Format(sacctTime),
		"--format=" + sacctFormat}
	return from, to, args
}

// add counts the jobs of a successful query for [from, to) and moves the
// next window on. Jobs ending at or after to wait for the next poll.
func (s *SacctCounter) add(jobs []SacctJob, from, to time.Time) {
	for _, j := range jobs {
		end, err := time.ParseInLocation(sacctTime, j.End, s.loc)
		if err != nil || end.Before(from) || end.Before(s.since) || !end.Before(to) {
			continue
		}
		k := j.ID + "|" + j.End
		if _, dup := s.seen[k]; dup {
			continue
		}
		s.seen[k] = end
		s.counts[EndKey{j.State, j.Partition, j.Account}]++
	}
	s.next = to
	for k, end := range s.seen {
		if end.Before(to.Add(-s.overlap)) {
			delete(s.seen, k)
		}
	}
}

// Counts copies the totals.
func (s *SacctCounter) Counts() map[EndKey]float64 {
	out := make(map[EndKey]float64, len(s.counts))
	for k, v := range s.counts {
		out[k] = v
	}
	return out
}

// ParseSince reads --slurm.sacct.since: a duration before now ("24h") or
// a time ("2026-01-01", "2026-01-01T00:00:00" in loc, or RFC 3339).
func ParseSince(s string, now time.Time, loc *time.Location) (time.Time, error) {
	s = strings.TrimSpace(s)
	if d, err := time.ParseDuration(s); err == nil {
		if d < 0 {
			return time.Time{}, fmt.Errorf("since %q: negative duration", s)
		}
		return now.Add(-d), nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	for _, layout := range []string{sacctTime, "2006-01-02"} {
		if t, err := time.ParseInLocation(layout, s, loc); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("since %q: want a duration (24h) or a time (2026-01-01, 2026-01-01T00:00:00)", s)
}
