// SPDX-License-Identifier: Apache-2.0

// Command benchctl measures controller mode at scale: it writes a
// simulated cluster (test/gen/cluster: 2,000 nodes and 50,000 jobs by
// default) as fake Slurm commands, runs each given jobscope binary in
// controller mode on it, in JSON and in text form, scrapes it repeatedly
// over HTTP (every scrape a new poll, a poll interval apart: all commands
// run, are parsed and emitted) and prints the median scrape time, the time per job, the
// series count and the process's resident memory.
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

func main() {
	bins := flag.String("bins", "now=bin/jobscope", "comma-separated name=binary pairs to compare")
	formats := flag.String("formats", "auto,text", "--slurm.format values to measure (auto: JSON where the version has it)")
	scrapes := flag.Int("scrapes", 7, "scrapes per binary and format")
	nodes := flag.Int("nodes", clustergen.Default.Nodes, "simulated nodes")
	jobs := flag.String("jobs", "10000,50000", "simulated job counts, comma-separated: the time per job is the difference between the first and the last over their difference in jobs (nodes and fixed costs cancel out)")
	testdata := flag.String("testdata", "testdata/slurm/22.05", "the real 22.05 captures the records come from")
	flag.Parse()
	var counts []int
	for _, c := range strings.Split(*jobs, ",") {
		n, err := strconv.Atoi(c)
		if err != nil {
			fail(err)
		}
		counts = append(counts, n)
	}
	dirs := map[int]string{}
	for _, n := range counts {
		dir, err := os.MkdirTemp("", "jobscope-benchctl-")
		if err != nil {
			fail(err)
		}
		defer os.RemoveAll(dir)
		shape := clustergen.Default
		shape.Nodes, shape.Jobs = *nodes, n
		if err := clustergen.Write(dir, *testdata, shape); err != nil {
			fail(err)
		}
		dirs[n] = dir
	}
	fmt.Printf("%d nodes; %d scrapes each, every one a new poll; medians\n", *nodes, *scrapes)
	fmt.Printf("%-8s %-5s %7s %10s %10s %12s %9s %9s %9s\n", "binary", "form", "jobs", "scrape_s", "us/job", "bytes", "series", "rss_MiB", "hwm_MiB")
	for _, pair := range strings.Split(*bins, ",") {
		name, bin, ok := strings.Cut(pair, "=")
		if !ok {
			fail(fmt.Errorf("-bins: %q is not name=binary", pair))
		}
		for _, format := range strings.Split(*formats, ",") {
			var first, last time.Duration
			for i, n := range counts {
				med, err := measure(name, bin, dirs[n], format, *scrapes, n)
				if err != nil {
					fail(fmt.Errorf("%s %s: %w", name, format, err))
				}
				if i == 0 {
					first = med
				}
				last = med
			}
			if len(counts) > 1 {
				d := counts[len(counts)-1] - counts[0]
				fmt.Printf("%-8s %-5s per job, %d to %d jobs: %.2f us\n", name, format, counts[0], counts[len(counts)-1],
					float64((last-first).Microseconds())/float64(d))
			}
		}
	}
}

func measure(name, bin, dir, format string, scrapes, jobs int) (time.Duration, error) {
	addr, err := benchproc.FreeAddr()
	if err != nil {
		return 0, err
	}
	cmd := exec.Command(bin, "--mode=controller", "--web.listen-address="+addr, "--slurm.bin-dir="+dir+"/bin",
		"--slurm.format="+format, "--slurm.poll-interval=4s", "--slurm.command-timeout=5m", "--web.scrape-timeout=5m",
		"--log.level=error")
	cmd.Env = append(os.Environ(), "TZ=UTC")
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	defer func() { _ = cmd.Process.Kill(); _, _ = cmd.Process.Wait() }()
	url := "http://" + addr + "/metrics"
	var body []byte
	for i := 0; i < 200; i++ { // the listener, bounded
		if body, err = benchproc.Scrape(url); err == nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil {
		return 0, err
	}
	var ds []time.Duration
	for range scrapes {
		// Past the poll interval: this scrape starts a new poll, and all
		// its collectors share that one (the interval must outlast a poll,
		// or a collector late in the scrape starts another).
		time.Sleep(4100 * time.Millisecond)
		start := time.Now()
		if body, err = benchproc.Scrape(url); err != nil {
			return 0, err
		}
		ds = append(ds, time.Since(start))
	}
	sort.Slice(ds, func(a, b int) bool { return ds[a] < ds[b] })
	med := ds[len(ds)/2]
	rss, hwm, _ := benchproc.Memory(cmd.Process.Pid)
	fmt.Printf("%-8s %-5s %7d %10.3f %10.2f %12d %9d %9.1f %9.1f\n", name, format, jobs, med.Seconds(),
		float64(med.Microseconds())/float64(jobs), len(body), series(body), rss, hwm)
	if bad := failing(body); bad != "" {
		return 0, fmt.Errorf("collectors failed: %s", bad)
	}
	return med, nil
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

func fail(err error) {
	fmt.Fprintln(os.Stderr, "benchctl:", err)
	os.Exit(1)
}
