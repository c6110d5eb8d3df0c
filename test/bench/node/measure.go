// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"time"

	benchproc "github.com/jobscope/jobscope/test/bench/proc"
)

type result struct {
	median, cpu time.Duration
	rss, anon   float64
	peakAnon    float64
	// release is the CPU the process spent while idle after the scrapes
	// (jobscope returns its heap to the OS then); cold is the CPU of one
	// scrape after that idle time.
	release, cold  time.Duration
	gzip, identity int
	perJob         float64
}

// idleWait is how long the exporter idles after the scrapes before its
// memory is read.
const idleWait = 3 * time.Second

// measure runs one configuration on the node: one scrape to warm up, then
// scrapes timed one after the other; memory is read after them.
func measure(c config, n *node, sh shape, scrapes int) (result, error) {
	var r result
	addr, err := benchproc.FreeAddr()
	if err != nil {
		return r, err
	}
	props := filepath.Join(n.root, "props")
	_ = os.MkdirAll(props, 0o755)
	args := append([]string{"--web.listen-address=" + addr, "--path.cgroupfs=" + n.cgroup, "--path.procfs=/proc",
		"--path.sysfs=" + n.root, "--slurm.job-props-dir=" + props, "--slurm.node-metadata.squeue=false", "--log.level=error",
		// eBPF would count this machine's scheduler, not the generated
		// jobs (make bench-bpf measures it); no GPU here.
		"--collector.ebpf=false", "--collector.gpu=false"}, c.flags...)
	if c.ebpf {
		pin := fmt.Sprintf("/sys/fs/bpf/jobscope-bench-%d", os.Getpid())
		defer os.RemoveAll(pin)
		args = append(args, "--bpf.pin-path="+pin)
	}
	cmd := exec.Command(c.bin, args...)
	cmd.Stderr = os.Stderr
	cmd.Env = append(os.Environ(), c.env...)
	if err := cmd.Start(); err != nil {
		return r, err
	}
	defer func() { _ = cmd.Process.Kill(); _, _ = cmd.Process.Wait() }()
	url := "http://" + addr + "/metrics"
	var body []byte
	for i := 0; i < 200; i++ { // wait for the listener, bounded
		if body, err = benchproc.Scrape(url); err == nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil {
		return r, err
	}
	var ds []time.Duration
	stop := samplePeakAnon(cmd.Process.Pid)
	cpu0 := benchproc.CPUTime(cmd.Process.Pid)
	for range scrapes {
		start := time.Now()
		if body, err = benchproc.Scrape(url); err != nil {
			return r, err
		}
		ds = append(ds, time.Since(start))
	}
	r.cpu = (benchproc.CPUTime(cmd.Process.Pid) - cpu0) / time.Duration(scrapes)
	r.peakAnon = stop()
	sort.Slice(ds, func(a, b int) bool { return ds[a] < ds[b] })
	r.median = ds[len(ds)/2]
	// Memory is read once the exporter has been idle past its release
	// delay (2 s), as between two scrapes of a real Prometheus.
	idle0 := benchproc.ThreadsCPU(cmd.Process.Pid)
	time.Sleep(idleWait)
	idle1 := benchproc.ThreadsCPU(cmd.Process.Pid)
	r.release = idle1 - idle0
	r.rss, _, r.anon = benchproc.Memory(cmd.Process.Pid)
	if _, err = benchproc.Scrape(url); err != nil {
		return r, err
	}
	r.cold = benchproc.ThreadsCPU(cmd.Process.Pid) - idle1
	r.identity = len(body)
	r.perJob = float64(bytes.Count(body, []byte(`jobid="`))) / float64(sh.jobs)
	r.gzip, err = gzipSize(url)
	return r, err
}

// gzipSize is the body's size as Prometheus fetches it (gzip).
func gzipSize(url string) (int, error) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Accept-Encoding", "gzip")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return len(b), err
}

// samplePeakAnon polls the process's anonymous memory while it scrapes
// and returns the highest value seen when stopped: VmHWM counts the mapped
// binary too, and the anonymous peak is what a scrape's garbage costs.
// Polling every 2 ms misses peaks shorter than that; a scrape's heap
// lives for tens of ms.
func samplePeakAnon(pid int) (stop func() float64) {
	done := make(chan struct{})
	peak := make(chan float64, 1)
	go func() {
		var highest float64
		t := time.NewTicker(2 * time.Millisecond)
		defer t.Stop()
		for {
			if _, _, a := benchproc.Memory(pid); a > highest {
				highest = a
			}
			select {
			case <-done:
				peak <- highest
				return
			case <-t.C:
			}
		}
	}()
	return func() float64 { close(done); return <-peak }
}
