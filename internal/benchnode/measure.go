package main

import (
	"bytes"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"time"

	"github.com/jobscope/jobscope/internal/benchproc"
)

type result struct {
	median, cpu    time.Duration
	rss, anon      float64
	gzip, identity int
	perJob         float64
}

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
	cmd := exec.Command(c.bin, args...)
	cmd.Stderr = os.Stderr
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
	cpu0 := benchproc.CPUTime(cmd.Process.Pid)
	for range scrapes {
		start := time.Now()
		if body, err = benchproc.Scrape(url); err != nil {
			return r, err
		}
		ds = append(ds, time.Since(start))
	}
	r.cpu = (benchproc.CPUTime(cmd.Process.Pid) - cpu0) / time.Duration(scrapes)
	sort.Slice(ds, func(a, b int) bool { return ds[a] < ds[b] })
	r.median = ds[len(ds)/2]
	r.rss, _, r.anon = benchproc.Memory(cmd.Process.Pid)
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
