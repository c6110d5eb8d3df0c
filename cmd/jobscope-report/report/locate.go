// SPDX-License-Identifier: Apache-2.0

package report

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/common/model"

	"github.com/jobscope/jobscope/slurmcli"
)

// Errors a caller tells apart (exit codes, tests).
var (
	ErrUnknownJob = errors.New("unknown job")
	ErrNoSamples  = errors.New("no samples")
	ErrAmbiguous  = errors.New("job id used by several jobs")
	ErrBadInput   = errors.New("bad input")
)

// subStep is the finest resolution of the subqueries that find a job's
// first and last sample; boundsStep coarsens it for long lookbacks.
const subStep = time.Minute

// maxSubqueryPoints bounds the steps of one subquery per series. Stores
// refuse more: VictoriaMetrics 1.79 at -search.maxPointsPerTimeseries
// (30,000 by default; it counts a few steps more than range/step), and
// Prometheus answers no range query of over 11,000 points. 10,000 keeps
// both well clear at any lookback.
const maxSubqueryPoints = 10000

// boundsStep is the resolution of the subqueries over a lookback: one
// minute up to about a week, then lookback/maxSubqueryPoints (4m20s at 30
// days, 53 minutes at a year). Precision does not depend on it: refine
// reads the raw samples within one step of each bound, so first and last
// sample are exact. A job whose samples all lie between two steps (shorter
// than a step, or its staleness marker came first) is not seen by the
// subqueries; rawBounds then reads its few samples whole.
func boundsStep(lookback time.Duration) time.Duration {
	// Whole seconds, rounded up: promDur renders the step in seconds.
	least := time.Duration(math.Ceil(lookback.Seconds()/maxSubqueryPoints)) * time.Second
	return max(subStep, least)
}

// boundsQueries find the first and last sample time of each job_key of
// match over the lookback, to within one step.
func boundsQueries(match string, lookback, step time.Duration) (first, last string) {
	sub := "[" + promDur(lookback) + ":" + promDur(step) + "]"
	return "min by (job_key) (min_over_time(timestamp(" + match + ")" + sub + "))",
		"max by (job_key) (max_over_time(timestamp(" + match + ")" + sub + "))"
}

// candidate is one job (one job_key) that used the id.
type candidate struct {
	key         string
	labels      map[string]string // slurm_job_info labels, most informative value of each
	nodes       []string
	first, last time.Time
	running     bool
	interval    time.Duration // scrape interval, from the samples
}

func (c *candidate) ref() JobRef {
	return JobRef{Key: c.key, Cluster: c.labels[lClust], User: c.labels[lUser], Nodes: c.nodes,
		FirstSample: c.first, LastSample: c.last}
}

// infoMatch selects the slurm_job_info series of a job id.
func (r *runner) infoMatch(id string, extra map[string]string) string {
	eq := map[string]string{lJobID: id}
	if r.cfg.Cluster != "" {
		eq[lClust] = r.cfg.Cluster
	}
	for k, v := range extra {
		eq[k] = v
	}
	return sel(mInfo, eq, "", "")
}

// candidates finds every job that used id within the lookback window, with
// its nodes, first and last sample and whether it still runs.
func (r *runner) candidates(ctx context.Context, id string) ([]*candidate, error) {
	now := r.now
	from := now.Add(-time.Duration(r.cfg.Lookback))
	match := r.infoMatch(id, nil)
	sets, err := r.prom.series(ctx, match, from, now)
	if err != nil {
		return nil, err
	}
	byKey := map[string]*candidate{}
	for _, ls := range sets {
		key := string(ls[lJobKey])
		c := byKey[key]
		if c == nil {
			c = &candidate{key: key, labels: map[string]string{}}
			byKey[key] = c
		}
		for n, v := range ls {
			if v != "" && n != model.MetricNameLabel && len(v) >= len(c.labels[string(n)]) {
				c.labels[string(n)] = string(v)
			}
		}
		if node := string(ls[model.LabelName(r.cfg.NodeLabel)]); node != "" && !slices.Contains(c.nodes, node) {
			c.nodes = append(c.nodes, node)
		}
	}
	if len(byKey) == 0 {
		return nil, nil
	}
	step := boundsStep(time.Duration(r.cfg.Lookback))
	qFirst, qLast := boundsQueries(match, time.Duration(r.cfg.Lookback), step)
	firsts, err := r.prom.vector(ctx, qFirst, now)
	if err != nil {
		return nil, err
	}
	lasts, err := r.prom.vector(ctx, qLast, now)
	if err != nil {
		return nil, err
	}
	live, err := r.prom.vector(ctx, "group by (job_key) ("+match+")", now)
	if err != nil {
		return nil, err
	}
	for _, s := range firsts {
		if c := byKey[string(s.Metric[lJobKey])]; c != nil {
			c.first = unixTime(float64(s.Value))
		}
	}
	for _, s := range lasts {
		if c := byKey[string(s.Metric[lJobKey])]; c != nil {
			c.last = unixTime(float64(s.Value))
		}
	}
	for _, s := range live {
		if c := byKey[string(s.Metric[lJobKey])]; c != nil {
			c.running = true
		}
	}
	var out []*candidate
	for _, c := range byKey {
		if c.first.IsZero() {
			// A job shorter than a step can fall between two steps: its
			// few raw samples are cheap to read whole.
			if err := r.rawBounds(ctx, id, c, from, now); err != nil {
				return nil, err
			}
		}
		if c.first.IsZero() {
			continue
		}
		if c.interval, err = r.refine(ctx, id, c, step); err != nil {
			return nil, err
		}
		sort.Strings(c.nodes)
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].first.Before(out[j].first) })
	return mergeUnkeyed(out), nil
}

// unkeyedGap is how long after its unkeyed samples a job's keyed ones may
// start and still be the same job.
const unkeyedGap = 10 * time.Minute

// mergeUnkeyed folds series without a job_key into the job that follows
// them on the same node: the exporter labels a job before it knows its
// start time (metadata arrives after the first scrapes), then with its
// key. Unkeyed series that no keyed job follows stay a job of their own.
func mergeUnkeyed(cands []*candidate) []*candidate {
	var out []*candidate
	for _, e := range cands {
		if e.key != "" {
			continue
		}
		merged := false
		for _, k := range cands {
			if k.key == "" || !sharesNode(e, k) || k.first.Before(e.first) || k.first.After(e.last.Add(unkeyedGap)) {
				continue
			}
			k.first = e.first
			for _, n := range e.nodes {
				if !slices.Contains(k.nodes, n) {
					k.nodes = append(k.nodes, n)
				}
			}
			sort.Strings(k.nodes)
			for l, v := range e.labels {
				if k.labels[l] == "" {
					k.labels[l] = v
				}
			}
			merged = true
			break
		}
		if !merged {
			out = append(out, e)
		}
	}
	for _, c := range cands {
		if c.key != "" {
			out = append(out, c)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].first.Before(out[j].first) })
	return out
}

func sharesNode(a, b *candidate) bool {
	for _, n := range a.nodes {
		if slices.Contains(b.nodes, n) {
			return true
		}
	}
	return false
}

// rawBounds sets a candidate's first and last sample from its raw samples
// in [from, to].
func (r *runner) rawBounds(ctx context.Context, id string, c *candidate, from, to time.Time) error {
	m, err := r.prom.matrix(ctx, r.infoMatch(id, map[string]string{lJobKey: c.key})+"["+promDur(to.Sub(from))+"]", to)
	if err != nil {
		return err
	}
	first, last, _ := sampleBounds(m)
	c.first, c.last = first, last
	return nil
}

// refine replaces the subquery's bounds of a job, found at resolution
// step, by its exact first and last sample, and estimates the scrape
// interval. timestamp() gives raw sample times on Prometheus and
// VictoriaMetrics alike, so each bound is a sample within one step of the
// true one.
func (r *runner) refine(ctx context.Context, id string, c *candidate, step time.Duration) (interval time.Duration, err error) {
	match := r.infoMatch(id, map[string]string{lJobKey: c.key})
	m, err := r.prom.matrix(ctx, match+"["+promDur(step+time.Second)+"]", c.first)
	if err != nil {
		return 0, err
	}
	first, _, interval := sampleBounds(m)
	if !first.IsZero() && first.Before(c.first.Add(time.Second)) {
		c.first = first
	}
	at := c.last.Add(step + time.Second)
	if at.After(r.now) {
		at = r.now
	}
	// From a step before the bound: on VictoriaMetrics the subquery's
	// last time can be the job's staleness marker, a scrape after its
	// last sample.
	m, err = r.prom.matrix(ctx, match+"["+promDur(at.Sub(c.last)+step+time.Second)+"]", at)
	if err != nil {
		return 0, err
	}
	_, last, iv := sampleBounds(m)
	if !last.IsZero() {
		c.last = last
	}
	if interval == 0 {
		interval = iv
	}
	return interval, nil
}

// sampleBounds returns the earliest and latest sample of a matrix and the
// median gap between consecutive samples of one series.
func sampleBounds(m model.Matrix) (first, last time.Time, interval time.Duration) {
	var gaps []float64
	for _, s := range m {
		for i, p := range s.Values {
			// VictoriaMetrics returns Prometheus's staleness markers
			// (NaN) among raw samples; they are no sample of the job.
			if math.IsNaN(float64(p.Value)) {
				continue
			}
			t := p.Timestamp.Time()
			if first.IsZero() || t.Before(first) {
				first = t
			}
			if t.After(last) {
				last = t
			}
			if i > 0 {
				gaps = append(gaps, float64(p.Timestamp-s.Values[i-1].Timestamp)/1000)
			}
		}
	}
	if len(gaps) > 0 {
		sort.Float64s(gaps)
		interval = time.Duration(gaps[len(gaps)/2] * float64(time.Second))
	}
	return first, last, interval
}

// choose picks the job to report among those that used the id.
func (r *runner) choose(id string, cands []*candidate) (*candidate, []JobRef, []string, error) {
	var notes []string
	others := func(chosen *candidate) []JobRef {
		var refs []JobRef
		for _, c := range cands {
			if c != chosen {
				refs = append(refs, c.ref())
			}
		}
		return refs
	}
	if r.opts.JobKey != "" {
		for _, c := range cands {
			if c.key == r.opts.JobKey {
				return c, others(c), nil, nil
			}
		}
		return nil, nil, nil, fmt.Errorf("%w: job %s has no job_key %q in the last %s; it has: %s",
			ErrUnknownJob, id, r.opts.JobKey, r.cfg.Lookback, describe(cands))
	}
	if len(cands) == 1 {
		return cands[0], nil, nil, nil
	}
	if r.opts.Reused != "latest" {
		return nil, nil, nil, fmt.Errorf("%w: job id %s names %d jobs in the last %s:\n%s\n"+
			"pick one with --job-key=KEY, or take the latest with --reused=latest",
			ErrAmbiguous, id, len(cands), r.cfg.Lookback, describe(cands))
	}
	latest := cands[len(cands)-1]
	notes = append(notes, fmt.Sprintf("Job id %s names %d jobs in the last %s (the id was reused); this report "+
		"is the latest, key %s. Use --job-key to pick another.", id, len(cands), r.cfg.Lookback, latest.key))
	return latest, others(latest), notes, nil
}

func describe(cands []*candidate) string {
	var b strings.Builder
	for i, c := range cands {
		if i > 0 {
			b.WriteByte('\n')
		}
		// One line per candidate: stderr's filter keeps newlines, and a
		// cluster name or user holding one would add a fake candidate.
		fmt.Fprintf(&b, "  key %s  user %s  cluster %s  nodes %s  samples %s .. %s", termSafe(c.key), termSafe(orDash(c.labels[lUser])),
			termSafe(orDash(c.labels[lClust])), termSafe(strings.Join(c.nodes, ",")), c.first.UTC().Format(time.RFC3339),
			c.last.UTC().Format(time.RFC3339))
	}
	return b.String()
}

// keyStart reads the start time discovery puts in a job_key of the form
// cluster/jobid/unix-seconds; other forms (a SLUID) give none.
func keyStart(key, id string) (time.Time, bool) {
	parts := strings.Split(key, "/")
	if len(parts) < 3 || parts[len(parts)-2] != id {
		return time.Time{}, false
	}
	n, err := strconv.ParseInt(parts[len(parts)-1], 10, 64)
	if err != nil || n <= 0 {
		return time.Time{}, false
	}
	return time.Unix(n, 0), true
}

// sluidTAISlack is how far a SLUID's clock may run ahead of UTC: Slurm
// takes it from CLOCK_TAI, which is UTC where the kernel's TAI offset is
// unset and UTC plus 37 s (the leap seconds since 1972, unchanged since
// 2017) where chrony or ntpd set it.
const sluidTAISlack = 37 * time.Second

// sluidSubmitted reads the time inside a Slurm 26.05 SLUID ("s" and 13
// Crockford base-32 digits of a 64-bit value: a 12-bit cluster id, the
// milliseconds slurmctld made the id at, a 10-bit sequence), which is when
// the job was submitted, not when it started. It returns the earliest UTC
// moment that time can be (less sluidTAISlack): a lower bound on the
// submission, so "submitted at or after T" holds whenever it says so.
func sluidSubmitted(key string) (time.Time, bool) {
	if !slurmcli.IsSLUID(key) {
		return time.Time{}, false
	}
	const digits = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
	var v uint64
	for i := 1; i < len(key); i++ {
		d := strings.IndexByte(digits, key[i])
		if d < 0 || v>>59 != 0 {
			return time.Time{}, false // 13 digits hold 65 bits: the top one must be 0
		}
		v = v<<5 | uint64(d)
	}
	ms := int64(v >> 10 & (1<<42 - 1))
	if ms == 0 {
		return time.Time{}, false
	}
	return time.UnixMilli(ms).Add(-sluidTAISlack), true
}

func unixTime(sec float64) time.Time {
	s, frac := math.Modf(sec)
	return time.Unix(int64(s), int64(math.Round(frac*1e3))*1e6)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
