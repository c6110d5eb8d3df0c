// SPDX-License-Identifier: Apache-2.0

// Command benchnode measures the real binary on generated Slurm nodes whose
// jobs hold real idle processes (3 user processes and 3 named slurmstepd
// per job, their pids in cgroup.procs): per tree and shape it times its own
// I/O floor (one sequential read of every file a default scrape needs,
// cgroupfs and procfs) and, in the same run, each configuration's scrapes
// over HTTP, and prints a table: median time and its ratio to the floor,
// CPU per scrape and its ratio to the floor's CPU, resident and anonymous
// memory after the scrapes, bytes gzip/identity, samples per job. The
// cgroup collector alone is compared with the floor's cgroupfs part.
// -base names a second binary (the main branch's) measured the same way.
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"sort"
	"strings"
	"time"
)

type config struct {
	name   string
	bin    string
	flags  []string
	cgroup bool     // cgroup collector alone: compared with the cgroupfs floor
	env    []string // added to the binary's environment
	ebpf   bool     // eBPF on: pins under a bpffs directory of its own
}

func main() {
	bin := flag.String("bin", "bin/jobscope", "jobscope binary")
	base := flag.String("base", "", "a second binary to compare (main's), measured in the same run")
	names := flag.String("shapes", "v2-128,v2-512,v1-128,v1-512,v2-256x1,v1-256x1,v2-4x64,v1-4x64", "shapes: "+shapeNames())
	scrapes := flag.Int("scrapes", 30, "scrapes per configuration")
	gogc := flag.String("gogc", "", "comma-separated GOGC values: the default configuration again under each (GC tuning's memory against its CPU)")
	idle := flag.Int("idle-threads", 0, "internal: be an idle job process with this many threads")
	flag.Parse()
	if *idle > 0 {
		idleThreads(*idle)
	}
	self, err := os.Executable()
	if err != nil {
		fail(err)
	}
	cgroupOnly := []string{"--collector.process=false", "--collector.power=false"}
	var configs []config
	if *base != "" {
		configs = append(configs, config{name: "main: default", bin: *base}, config{name: "main: cgroup alone", bin: *base, flags: cgroupOnly, cgroup: true})
	}
	configs = append(configs, config{name: "default", bin: *bin}, config{name: "cgroup alone", bin: *bin, flags: cgroupOnly, cgroup: true})
	for _, g := range strings.Split(*gogc, ",") {
		if g != "" {
			configs = append(configs, config{name: "default, GOGC=" + g, bin: *bin, env: []string{"GOGC=" + g}})
		}
	}
	for _, name := range strings.Split(*names, ",") {
		sh, ok := shapes[name]
		if !ok {
			fail(fmt.Errorf("unknown shape %q (%s)", name, shapeNames()))
		}
		if err := run(sh, self, configs, *scrapes); err != nil {
			fail(fmt.Errorf("%s: %w", name, err))
		}
	}
}

func run(sh shape, self string, configs []config, scrapes int) error {
	if sh.real {
		configs = realConfigs(configs)
	}
	n, err := build(sh, self)
	defer n.close()
	if err != nil {
		return err
	}
	time.Sleep(200 * time.Millisecond) // the processes have started
	fw, fcpu, err := floor(n.floor, scrapes)
	if err != nil {
		return err
	}
	cg := cgroupFiles(n.floor)
	cw, ccpu, err := floor(cg, scrapes)
	if err != nil {
		return err
	}
	fmt.Printf("\n### %s: %d processes\n\nfloor: %d files (%d cgroupfs) %.2f ms, CPU %.2f ms; cgroupfs alone %.2f ms, CPU %.2f ms\n\n",
		sh.name, len(n.procs), len(n.floor), len(cg), ms(fw), ms(fcpu), ms(cw), ms(ccpu))
	fmt.Println("| configuration | median ms | × floor | CPU ms/scrape | × floor CPU | RSS MiB (anon) idle | peak anon MiB | idle CPU ms | CPU ms, scrape after idle | bytes gzip / identity | samples/job |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|---|---|")
	for _, c := range configs {
		r, err := measure(c, n, sh, scrapes)
		if err != nil {
			return fmt.Errorf("%s: %w", c.name, err)
		}
		w, cpu := fw, fcpu
		if c.cgroup {
			w, cpu = cw, ccpu
		}
		fmt.Printf("| %s | %.1f | %.2f | %.1f | %.2f | %.1f (%.1f) | %.1f | %.1f | %.1f | %d / %d | %.1f |\n", c.name, ms(r.median), ratio(r.median, w),
			ms(r.cpu), ratio(r.cpu, cpu), r.rss, r.anon, r.peakAnon, ms(r.release), ms(r.cold), r.gzip, r.identity, r.perJob)
	}
	return nil
}

// idleThreads is a job process that sleeps on n threads.
func idleThreads(n int) {
	for range n - 1 {
		go func() {
			runtime.LockOSThread()
			select {}
		}()
	}
	runtime.LockOSThread()
	select {}
}

func shapeNames() string {
	var s []string
	for k := range shapes {
		s = append(s, k)
	}
	sort.Strings(s)
	return strings.Join(s, ",")
}

func ratio(a, b time.Duration) float64 {
	if b <= 0 {
		return 0
	}
	return float64(a) / float64(b)
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func fail(err error) {
	fmt.Fprintln(os.Stderr, "benchnode:", err)
	os.Exit(1)
}
