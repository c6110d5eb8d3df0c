// SPDX-License-Identifier: Apache-2.0

// Command benchctl measures controller mode at scale: it writes simulated
// clusters (test/gen/cluster, from real 22.05 records: 10,000 and 50,000
// jobs on 2,000 nodes and 100,000 on 5,000 by default) as fake Slurm
// commands, runs each given jobscope binary in controller mode on each, in
// the default form (JSON), in text and with jobs and nodes from a fake
// slurmrestd (restd.go), scrapes it repeatedly over HTTP
// (every scrape a new poll, a poll interval apart: all commands run, are
// parsed and emitted) and prints one table: the median poll time and CPU
// time, the bytes allocated per job and per poll, the series, and the
// process's resident memory and its peak.
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"time"

	benchproc "github.com/jobscope/jobscope/test/bench/proc"
	clustergen "github.com/jobscope/jobscope/test/gen/cluster"
)

// size is one simulated cluster.
type size struct{ jobs, nodes int }

func main() {
	bins := flag.String("bins", "now=bin/jobscope", "comma-separated name=binary pairs to compare, measured in this run")
	formats := flag.String("formats", "auto,text,restd", "sources to measure: --slurm.format values (auto, the default: JSON where the version has it; text) and restd (--slurm.source=slurmrestd against a fake 22.05 slurmrestd serving the same cluster)")
	scrapes := flag.Int("scrapes", 5, "scrapes per binary, format and size; the first after start-up is not counted")
	sizes := flag.String("sizes", "10000,50000,100000@5000", "simulated clusters, comma-separated: jobs, or jobs@nodes (nodes default to -nodes)")
	nodes := flag.Int("nodes", clustergen.Default.Nodes, "simulated nodes where -sizes names none")
	testdata := flag.String("testdata", "testdata/slurm/22.05", "the real 22.05 captures the records come from")
	flag.Parse()
	var shapes []size
	for _, c := range strings.Split(*sizes, ",") {
		j, n, found := strings.Cut(c, "@")
		s := size{nodes: *nodes}
		var err error
		if s.jobs, err = strconv.Atoi(j); err != nil {
			fail(fmt.Errorf("-sizes: %w", err))
		}
		if found {
			if s.nodes, err = strconv.Atoi(n); err != nil {
				fail(fmt.Errorf("-sizes: %w", err))
			}
		}
		shapes = append(shapes, s)
	}
	dirs := map[size]string{}
	for _, s := range shapes {
		dir, err := os.MkdirTemp("", "jobscope-benchctl-")
		if err != nil {
			fail(err)
		}
		defer os.RemoveAll(dir)
		shape := clustergen.Default
		shape.Nodes, shape.Jobs = s.nodes, s.jobs
		if err := clustergen.Write(dir, *testdata, shape); err != nil {
			fail(err)
		}
		dirs[s] = dir
	}
	fmt.Printf("controller mode; %d scrapes each after the first, every one a new poll; medians. form json is the default (--slurm.format=auto)\n", *scrapes)
	fmt.Printf("%-6s %-5s %7s %6s %8s %8s %8s %9s %10s %7s %8s %8s\n", "binary", "form", "jobs", "nodes",
		"poll_s", "cpu_s", "us/job", "KB/job", "MB/poll", "series", "rss_MiB", "peak_MiB")
	for _, s := range shapes {
		for _, format := range strings.Split(*formats, ",") {
			for _, pair := range strings.Split(*bins, ",") {
				name, bin, ok := strings.Cut(pair, "=")
				if !ok {
					fail(fmt.Errorf("-bins: %q is not name=binary", pair))
				}
				form := format
				if form == "auto" {
					form = "json"
				}
				if form == "restd" && !hasRestdSource(bin) {
					fmt.Printf("%-6s %-5s %7d %6d   no slurmrestd source in this binary\n", name, form, s.jobs, s.nodes)
					continue
				}
				r, err := measure(bin, dirs[s], format, *scrapes)
				if err != nil {
					// One binary failing at one size is a result too: the
					// rest of the table is still measured.
					fmt.Printf("%-6s %-5s %7d %6d   failed: %v\n", name, form, s.jobs, s.nodes, err)
					continue
				}
				fmt.Printf("%-6s %-5s %7d %6d %8.3f %8.3f %8.2f %9.2f %10.1f %7d %8.1f %8.1f\n", name, form, s.jobs, s.nodes,
					r.poll.Seconds(), r.cpu.Seconds(), float64(r.poll.Microseconds())/float64(s.jobs),
					r.allocPerPoll/float64(s.jobs)/1000, r.allocPerPoll/1e6, r.series, r.rss, r.hwm)
			}
		}
	}
}

// result is one binary's figures on one cluster in one form.
type result struct {
	poll, cpu    time.Duration // medians
	allocPerPoll float64       // bytes, Go's allocation counter
	series       int
	rss, hwm     float64 // MiB
}

func measure(bin, dir, format string, scrapes int) (result, error) {
	var res result
	addr, err := benchproc.FreeAddr()
	if err != nil {
		return res, err
	}
	args := []string{"--mode=controller", "--web.listen-address=" + addr, "--slurm.bin-dir=" + dir + "/bin",
		"--slurm.poll-interval=4s", "--slurm.command-timeout=5m", "--web.scrape-timeout=5m", "--log.level=error"}
	if format == "restd" {
		// Jobs and nodes from slurmrestd; the other collectors (sdiag,
		// sshare, licenses, reservations, sacct) still run the commands.
		f, err := startFakeRestd(dir)
		if err != nil {
			return res, err
		}
		defer f.Close()
		args = append(args, "--slurm.source=slurmrestd", "--slurm.restd.url="+f.url())
	} else {
		args = append(args, "--slurm.format="+format)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "TZ=UTC")
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return res, err
	}
	defer func() { _ = cmd.Process.Kill(); _, _ = cmd.Process.Wait() }()
	url := "http://" + addr + "/metrics"
	var body []byte
	for range 200 { // the listener, bounded
		if body, err = benchproc.Scrape(url); err == nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil {
		return res, err
	}
	var ds, cpus []time.Duration
	var allocs []float64
	for range scrapes {
		// Past the poll interval: this scrape starts a new poll, and all
		// its collectors share that one (the interval must outlast a poll,
		// or a collector late in the scrape starts another).
		time.Sleep(4100 * time.Millisecond)
		cpu0, start := benchproc.CPUTime(cmd.Process.Pid), time.Now()
		if body, err = benchproc.Scrape(url); err != nil {
			return res, err
		}
		ds = append(ds, time.Since(start))
		cpus = append(cpus, benchproc.CPUTime(cmd.Process.Pid)-cpu0)
		allocs = append(allocs, metric(body, "go_memstats_alloc_bytes_total"))
	}
	if bad := failing(body); bad != "" {
		return res, fmt.Errorf("collectors failed: %s (%s)", bad, sourceErrors(body))
	}
	res.poll, res.cpu = median(ds), median(cpus)
	if n := len(allocs); n > 1 {
		// Between the first and the last scrape: n-1 whole polls.
		res.allocPerPoll = (allocs[n-1] - allocs[0]) / float64(n-1)
	}
	res.series = series(body)
	res.rss, res.hwm, _ = benchproc.Memory(cmd.Process.Pid)
	return res, nil
}

func median(ds []time.Duration) time.Duration {
	sort.Slice(ds, func(a, b int) bool { return ds[a] < ds[b] })
	return ds[len(ds)/2]
}

// metric reads an unlabelled sample of an exposition (0 if absent).
func metric(b []byte, name string) float64 {
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, name+" "); ok {
			f, _ := strconv.ParseFloat(v, 64)
			return f
		}
	}
	return 0
}

// series counts the samples of an exposition.
func series(b []byte) int {
	n := 0
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if l := sc.Text(); l != "" && l[0] != '#' {
			n++
		}
	}
	return n
}

// failing names the collectors whose success is 0: a benchmark of a
// failing scrape measures nothing.
func failing(b []byte) string {
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "jobscope_scrape_collector_success{") && strings.HasSuffix(l, " 0") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "; ")
}

// sourceErrors names the Slurm commands that failed, and why, from the
// exporter's own counters.
func sourceErrors(b []byte) string {
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "jobscope_slurm_command_errors_total{") && !strings.HasSuffix(l, " 0") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "; ")
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "benchctl:", err)
	os.Exit(1)
}
