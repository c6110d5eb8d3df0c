// SPDX-License-Identifier: Apache-2.0

package main

import (
	"errors"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// fakeRestd serves a simulated cluster as 22.05's slurmrestd would on a
// unix socket: /slurm/v0.0.38/jobs and /nodes are the cluster's squeue
// --json and sinfo --json (22.05's commands print v0.0.38's dumps), every
// newer version's ping is a 404 (jobscope's version probe), and
// update_time is ignored, so every poll gets the full list: the cost of a
// cluster where something changes between any two polls. The answers are
// read from disk at each request, as slurmrestd builds each one anew; the
// server's CPU is this process's, not the measured binary's.
type fakeRestd struct {
	dir, sock string
	srv       *http.Server
}

func startFakeRestd(dir string) (*fakeRestd, error) {
	f := &fakeRestd{dir: dir, sock: filepath.Join(dir, "slurmrestd.sock")}
	_ = os.Remove(f.sock)
	l, err := net.Listen("unix", f.sock)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/slurm/v0.0.38/ping", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"meta":{},"errors":[],"pings":[{"hostname":"ctl","ping":"UP","status":0,"mode":"primary"}]}`))
	})
	mux.HandleFunc("/slurm/v0.0.38/jobs", f.file("squeue.json"))
	mux.HandleFunc("/slurm/v0.0.38/nodes", f.file("sinfo.json"))
	f.srv = &http.Server{Handler: mux}
	go func() { _ = f.srv.Serve(l) }()
	return f, nil
}

func (f *fakeRestd) file(name string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		b, err := os.ReadFile(filepath.Join(f.dir, name))
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(b)
	}
}

func (f *fakeRestd) url() string { return "unix://" + f.sock }

func (f *fakeRestd) Close() { _ = f.srv.Close(); _ = os.Remove(f.sock) }

// hasRestdSource says whether bin has the slurmrestd source (an older
// binary, such as main's beside this tree, may not).
func hasRestdSource(bin string) bool {
	out, err := exec.Command(bin, "--help").CombinedOutput()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		return false
	}
	return strings.Contains(string(out), "--slurm.source")
}
