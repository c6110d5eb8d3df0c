// SPDX-License-Identifier: Apache-2.0

package slurmcli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// slurmNoChange is SLURM_NO_CHANGE_IN_DATA, slurmctld's answer to an RPC
// whose update_time is not older than its data.
const slurmNoChange = 1900

// restdTop is what a slurmrestd answer holds beside its list: the time
// slurmctld last changed the data (sent back as update_time by the next
// request), and the warnings and errors that say "no change".
type restdTop struct {
	LastUpdate flexNum
	Warnings   []restdWarning
	Errors     slurmErrors
}

// restdWarning is one entry of an answer's "warnings" list.
type restdWarning struct {
	Description string `json:"description"`
	Source      string `json:"source"`
}

// field keeps the top-level fields the squeue stream decoder passes on.
func (t *restdTop) field(k, raw []byte) error {
	switch {
	case bytes.EqualFold(k, []byte("last_update")):
		return t.LastUpdate.UnmarshalJSON(raw)
	case bytes.EqualFold(k, []byte("warnings")):
		t.Warnings = nil
		return json.Unmarshal(raw, &t.Warnings)
	}
	return nil
}

// noChange says whether the answer is slurmctld's "nothing changed since
// update_time", in the forms slurmrestd gives it (besides HTTP 304, which
// the router sends when a handler returns SLURM_NO_CHANGE_IN_DATA):
//   - /jobs from 23.02 on: HTTP 200, an empty (or missing) "jobs" list
//     and the warning "No job changes since update_time=T" (23.02), or
//     "No job changes since update_time[T]=<date>" (23.11 and later);
//   - /nodes: the error SLURM_NO_CHANGE_IN_DATA (1900) with "Failure to
//     query nodes" where the handler does not turn it into a 304.
//
// 22.05's v0.0.38 ignores update_time (and prints no last_update, so
// jobscope never sends one to it).
func (t *restdTop) noChange() bool {
	for _, e := range t.Errors {
		if e.Number == slurmNoChange || e.ErrorCode == slurmNoChange {
			return true
		}
	}
	for _, w := range t.Warnings {
		if strings.Contains(strings.ToLower(w.Description), "changes since update_time") {
			return true
		}
	}
	return false
}

// restdParse reads one answer's list, handing the fields beside it to top;
// hint is the previous list's length.
type restdParse[T any] func(r io.Reader, top *restdTop, hint int) (T, int, error)

// restdFetch is a source read from slurmrestd's path (under /slurm/<v>),
// counted as name. With conditional, each request after a full answer
// carries that answer's last_update as update_time, and an answer of
// "no change" keeps the previous value, fresh (slurmctld said so), without
// packing or decoding it again. "No change" to a request that carried no
// update_time (the first, or after an answer without last_update) is a
// fault of slurmrestd or a proxy, never an empty list: an error,
// counted as a parse error.
func restdFetch[T any](rd *Restd, name, path string, conditional bool, parse restdParse[T]) func(context.Context) (T, string, error) {
	// Read and written by this source's fetch only (one at a time).
	var (
		prev    T
		prevLen int
		since   int64 // slurmctld's last_update of prev; 0: none
		// noSince is the version that refused update_time as unix
		// seconds: it is asked without it from then on.
		noSince string
	)
	return func(ctx context.Context) (T, string, error) {
		var zero T
		v, err := rd.Version(ctx)
		if err != nil {
			return zero, RestdPing, err
		}
		q := url.Values{}
		if conditional && since > 0 && noSince != v {
			q.Set("update_time", strconv.FormatInt(since, 10))
		}
		var (
			top       restdTop
			val       T
			n         int
			unchanged bool
		)
		// v0.0.40 and v0.0.41 (23.11 to 25.05) read update_time as a date
		// and refuse unix seconds with 422 ("Parsing of <n> for timestamp
		// failed", seen on 24.11): an expected answer, not an error; that
		// version is then asked without it, at once and from then on.
		var expect []int
		if q.Has("update_time") {
			expect = []int{http.StatusUnprocessableEntity, http.StatusBadRequest}
		}
		consume := func(r io.Reader) error {
			var perr error
			val, n, perr = parse(r, &top, prevLen)
			if top.noChange() {
				unchanged = true
				return nil
			}
			if perr != nil {
				return fmt.Errorf("slurmrestd %s: %w", path, perr)
			}
			return nil
		}
		err = rd.get(ctx, name, "/slurm/"+v+path, q, consume, expect...)
		var he *HTTPError
		if errors.As(err, &he) && slices.Contains(expect, he.Status) {
			noSince, since = v, 0
			rd.cfg.Logger.Info("slurmrestd refuses update_time as unix seconds in this version: asking for the whole list every poll",
				"path", path, "data_parser", v, "status", he.Status, "message", he.Message)
			top, unchanged = restdTop{}, false
			err = rd.get(ctx, name, "/slurm/"+v+path, nil, consume)
		}
		switch {
		case errors.Is(err, errNotModified):
			unchanged = true
		case errors.As(err, &he) && he.Status == http.StatusNotFound:
			rd.forget(v) // upgraded away: probe again next time
			return zero, name, err
		case err != nil:
			return zero, name, err
		}
		if unchanged {
			if since == 0 {
				rd.stats.ParseError(name)
				return zero, name, fmt.Errorf("slurmrestd %s answered \"no change\" to a request without update_time: "+
					"no previous value to keep (a slurmrestd or proxy fault)", path)
			}
			return prev, name, nil
		}
		prev, prevLen, since = val, n, 0
		if top.LastUpdate.Set && top.LastUpdate.V > 0 {
			since = int64(top.LastUpdate.V)
		}
		return val, name, nil
	}
}

// restdJobs reads GET /slurm/<v>/jobs with the squeue --json decoder: the
// answer is the same data_parser dump (from 23.02 squeue --json prints
// slurmrestd's job list response, last_update included; 22.05's
// squeue --json and v0.0.38's /jobs share the job shape).
func restdJobs(r io.Reader, top *restdTop, hint int) ([]Job, int, error) {
	jobs, err := decodeSqueueStream(r, max(hint+hint/16, 0), top)
	return jobs, len(jobs), err
}

// restdNodes reads GET /slurm/<v>/nodes with sinfo --json's decoder of
// its "nodes" list (22.05's sinfo --json prints that list; from 23.02 it
// is what `scontrol show node --json` and /nodes print).
func restdNodes(r io.Reader, top *restdTop, _ int) ([]Node, int, error) {
	nodes, err := parseSinfoJSON(r, top)
	return nodes, len(nodes), err
}
