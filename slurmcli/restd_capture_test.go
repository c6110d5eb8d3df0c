// SPDX-License-Identifier: Apache-2.0

package slurmcli

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// restdCapture is one real slurmrestd answer set of one moment, saved by
// test/e2e/restd.sh (22.05) or test/vm/guest/capture.sh (24.11, 26.05)
// beside squeue --json and sinfo --json of the same moment:
// restd-{jobs,nodes}-<v>-<when>.json, and restd-jobs-since-<v>-<when>.json,
// the answer to /jobs?update_time=<the full answer's last_update> asked
// right after it. restd-status.tsv has each file's HTTP status.
type restdCapture struct {
	dir, version, when string
	status             map[string]int // file name: HTTP status
}

func (c restdCapture) file(kind string) string {
	return filepath.Join(c.dir, "restd-"+kind+"-"+c.version+"-"+c.when+".json")
}

// restdCaptures finds the captures of the data_parser versions jobscope
// reads (RestdVersions); slurmrestd's older plugins are captured too, for
// reading.
func restdCaptures(t *testing.T) []restdCapture {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("..", "testdata", "slurm", "*", "restd-jobs-v*.json"))
	if err != nil {
		t.Fatal(err)
	}
	var out []restdCapture
	for _, f := range files {
		rest := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(f), "restd-jobs-"), ".json")
		v, when, ok := strings.Cut(rest, "-")
		if !ok || !slices.Contains(RestdVersions, v) {
			continue
		}
		c := restdCapture{dir: filepath.Dir(f), version: v, when: when, status: restdStatus(t, filepath.Dir(f))}
		out = append(out, c)
	}
	return out
}

// restdStatus reads restd-status.tsv: file, HTTP status, ... per line.
func restdStatus(t *testing.T, dir string) map[string]int {
	t.Helper()
	fh, err := os.Open(filepath.Join(dir, "restd-status.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = fh.Close() }()
	st := map[string]int{}
	sc := bufio.NewScanner(fh)
	for sc.Scan() {
		f := strings.Split(sc.Text(), "\t")
		if len(f) < 2 {
			continue
		}
		if n, err := strconv.Atoi(f[1]); err == nil {
			st[f[0]] = n
		}
	}
	return st
}

// serveCapture answers with a capture and the HTTP status it was given.
func serveCapture(t *testing.T, c restdCapture, path string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Error(err)
			http.Error(w, err.Error(), 500)
			return
		}
		code, ok := c.status[filepath.Base(path)]
		if !ok {
			t.Errorf("%s: no HTTP status in restd-status.tsv", path)
		}
		w.WriteHeader(code)
		_, _ = w.Write(b)
	}
}

// The jobs and nodes a real slurmrestd answered equal those squeue --json
// and sinfo --json gave at the same moment, read by the source's own
// client and cache; the conditional request right after the full one is
// "no change" (the previous jobs kept) where the version prints a
// last_update, and is never sent where it prints none.
func TestRestdRealCaptures(t *testing.T) {
	caps := restdCaptures(t)
	if len(caps) == 0 {
		// None is in the tree yet: `make e2e` saves 22.05's into
		// /tmp/jobscope-e2e/restd-capture, `test/vm/run.sh --capture B C`
		// those of 24.11 and 26.05.
		t.Skip("no real slurmrestd capture (testdata/slurm/*/restd-jobs-v*.json) yet")
	}
	for _, c := range caps {
		t.Run(filepath.Base(c.dir)+"/"+c.version+"/"+c.when, func(t *testing.T) {
			since := c.file("jobs-since")
			f := newFakeRestd(t, pingAt(c.version, func(w http.ResponseWriter, r *http.Request) {
				switch {
				case r.URL.Path == "/slurm/"+c.version+"/jobs" && r.URL.Query().Has("update_time"):
					serveCapture(t, c, since)(w, r)
				case r.URL.Path == "/slurm/"+c.version+"/jobs":
					serveCapture(t, c, c.file("jobs"))(w, r)
				case r.URL.Path == "/slurm/"+c.version+"/nodes":
					serveCapture(t, c, c.file("nodes"))(w, r)
				default:
					http.NotFound(w, r)
				}
			}))
			rd, runner := newTestRestd(t, RestdConfig{URL: f.url})
			clk := newFakeClock()
			cache := NewCache(CacheConfig{Runner: &Runner{}, Interval: time.Minute, Restd: rd, Now: clk.Now})
			t.Cleanup(cache.Close)

			jobs, _, ok, err := serve(context.Background(), cache, cache.Jobs)
			if !ok || err != nil {
				t.Fatalf("jobs: %v", err)
			}
			// Jobs still in the queue: from 23.02, squeue --json leaves out
			// those that ended, which /jobs lists until MinJobAge (both
			// sources pass every job to InQueue, which drops them).
			want := parseFile(t, filepath.Join(c.dir, "squeue-"+c.when+".json"), ParseSqueueJSON)
			if inQueue(want) == nil || !reflect.DeepEqual(inQueue(jobs), inQueue(want)) {
				t.Errorf("jobs in the queue via slurmrestd differ from squeue --json of the same moment:\n%+v\n%+v", inQueue(jobs), inQueue(want))
			}
			nodes, _, ok, err := serve(context.Background(), cache, cache.Nodes)
			if !ok || err != nil {
				t.Fatalf("nodes: %v", err)
			}
			wantNodes := parseFile(t, filepath.Join(c.dir, "sinfo-"+c.when+".json"), ParseSinfoJSON)
			// Load and free memory move with slurmd's pings between the two
			// reads (seconds apart: sinfo first, then each version's
			// /nodes); everything else is the nodes' state.
			if len(wantNodes) == 0 || !reflect.DeepEqual(withoutPings(nodes), withoutPings(wantNodes)) {
				t.Errorf("nodes via slurmrestd differ from sinfo --json of the same moment:\n%+v\n%+v", nodes, wantNodes)
			}

			// The next poll: a conditional request where the full answer
			// gave a last_update.
			var top restdTop
			_ = parseFile(t, c.file("jobs"), func(r io.Reader) ([]Job, error) {
				j, _, err := restdJobs(r, &top, 0)
				return j, err
			})
			clk.Add(time.Minute)
			again, _, ok, err := serve(context.Background(), cache, cache.Jobs)
			if !ok || err != nil {
				t.Fatalf("second poll: %v", err)
			}
			reqs := f.requests("/jobs")
			sent := "" // the last update_time asked (a refused one is asked again without it)
			for _, r := range reqs {
				if r.URL.Query().Has("update_time") {
					sent = r.URL.Query().Get("update_time")
				}
			}
			if !top.LastUpdate.Set || top.LastUpdate.V <= 0 {
				if sent != "" {
					t.Errorf("update_time=%s sent, but the full answer had no last_update", sent)
				}
				return
			}
			if sent != strconv.FormatInt(int64(top.LastUpdate.V), 10) {
				t.Errorf("update_time=%q, want the full answer's last_update %v", sent, top.LastUpdate.V)
			}
			// What the conditional answer was decides the second poll's jobs:
			//   - "no change" (a 304, or an empty list with Slurm's warning):
			//     the previous jobs, kept fresh;
			//   - update_time refused (v0.0.40 and v0.0.41 on 24.11: 422):
			//     the whole list asked again without it;
			//   - a list with a later last_update: the data changed in
			//     between (24.11's v0.0.42 while jobs ran), that list.
			want, what := jobs, "the previous jobs"
			switch code := c.status[filepath.Base(since)]; code {
			case http.StatusNotModified:
			case http.StatusUnprocessableEntity, http.StatusBadRequest:
				what = "the whole list asked again"
			default:
				var stop restdTop
				got := parseFile(t, since, func(r io.Reader) ([]Job, error) {
					j, _, err := restdJobs(r, &stop, 0)
					return j, err
				})
				switch {
				case len(got) == 0 && stop.noChange():
				case !stop.noChange() && stop.LastUpdate.Set && stop.LastUpdate.V > top.LastUpdate.V:
					want, what = got, "the changed list"
				default:
					t.Fatalf("%s (HTTP %d): %d jobs, no change %v, last_update %v after %v: neither \"no change\" nor newer data",
						since, code, len(got), stop.noChange(), stop.LastUpdate.V, top.LastUpdate.V)
				}
			}
			if !reflect.DeepEqual(again, want) {
				t.Errorf("second poll: %d jobs, want %s (%d)", len(again), what, len(want))
			}
			if _, st := runner.Stats().Snapshot(); len(st[RestdJobs].Errors) != 0 {
				t.Errorf("errors counted: %v", st[RestdJobs].Errors)
			}
		})
	}
}

// withoutPings is nodes without the figures slurmd's pings refresh.
func withoutPings(nodes []Node) []Node {
	out := slices.Clone(nodes)
	for i := range out {
		out[i].CPULoad, out[i].FreeMemoryBytes = 0, 0
	}
	return out
}

// inQueue keeps the jobs that have not ended.
func inQueue(jobs []Job) []Job {
	var out []Job
	for _, j := range jobs {
		if j.InQueue() {
			out = append(out, j)
		}
	}
	return out
}

// parseFile parses a capture with parse.
func parseFile[T any](t *testing.T, path string, parse func(io.Reader) (T, error)) T {
	t.Helper()
	fh, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = fh.Close() }()
	v, err := parse(fh)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return v
}
