// Command benchrss measures the real binary: it generates cgroup v2 trees
// of N jobs, runs bin/jobscope on each, scrapes it repeatedly over HTTP and
// prints the median and p90 scrape time, the exposition size and the
// process's resident memory (VmRSS, VmHWM).
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/jobscope/jobscope/internal/benchproc"
	"github.com/jobscope/jobscope/internal/fixturegen"
)

func main() {
	jobs := flag.String("jobs", "128,512", "comma-separated job counts")
	bin := flag.String("bin", "bin/jobscope", "jobscope binary")
	scrapes := flag.Int("scrapes", 30, "scrapes per tree")
	extra := flag.String("flags", "", "extra jobscope flags, space-separated (e.g. --collector.process=false)")
	flag.Parse()
	fmt.Printf("%-6s %12s %12s %12s %10s %10s %10s %10s\n", "jobs", "median_ms", "p90_ms", "bytes", "rss_MiB", "hwm_MiB", "anon_MiB", "cpu_ms")
	for _, s := range strings.Split(*jobs, ",") {
		n, err := strconv.Atoi(s)
		if err != nil {
			fail(err)
		}
		if err := measure(*bin, n, *scrapes, strings.Fields(*extra)); err != nil {
			fail(err)
		}
	}
}

func measure(bin string, n, scrapes int, extra []string) error {
	dir, err := os.MkdirTemp(fixturegen.BenchDir(), "jobscope-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	root := filepath.Join(dir, "cgroup")
	if err := fixturegen.V2Node(root, n); err != nil {
		return err
	}
	addr, err := benchproc.FreeAddr()
	if err != nil {
		return err
	}
	args := append([]string{"--web.listen-address=" + addr, "--path.cgroupfs=" + root, "--path.procfs=" + dir,
		"--path.sysfs=" + dir, "--slurm.node-metadata.squeue=false", "--log.level=error",
		// eBPF would attach to this machine's scheduler: bench-bpf measures it.
		"--collector.ebpf=false"}, extra...)
	cmd := exec.Command(bin, args...)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return err
	}
	defer func() { _ = cmd.Process.Kill(); _, _ = cmd.Process.Wait() }()
	url := "http://" + addr + "/metrics"
	var size int
	for i := 0; i < 100; i++ { // wait for the listener, bounded
		if size, err = scrape(url); err == nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil {
		return err
	}
	var ds []time.Duration
	cpu0 := benchproc.CPUTime(cmd.Process.Pid)
	for range scrapes {
		start := time.Now()
		if size, err = scrape(url); err != nil {
			return err
		}
		ds = append(ds, time.Since(start))
	}
	cpu := (benchproc.CPUTime(cmd.Process.Pid) - cpu0) / time.Duration(scrapes)
	sort.Slice(ds, func(a, b int) bool { return ds[a] < ds[b] })
	rss, hwm, anon := benchproc.Memory(cmd.Process.Pid)
	fmt.Printf("%-6d %12.2f %12.2f %12d %10.1f %10.1f %10.1f %10.2f\n", n, ms(ds[len(ds)/2]), ms(ds[len(ds)*9/10]), size, rss, hwm, anon, ms(cpu))
	return nil
}

func scrape(url string) (int, error) {
	b, err := benchproc.Scrape(url)
	return len(b), err
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func fail(err error) {
	fmt.Fprintln(os.Stderr, "benchrss:", err)
	os.Exit(1)
}
