// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/jobscope/jobscope/test/kernels/report"
)

// product starts the jobscope binary with its node-mode defaults, runs a job
// (a burner, then a live process) and scrapes it: which collectors work,
// which of the job's families exist, and per-core CPU against cpu.stat.
func product(r *report.Result, bin, v2 string) {
	p := &r.Product
	fail := func(f string, a ...any) { r.Failures = append(r.Failures, "jobscope: "+fmt.Sprintf(f, a...)) }
	id := jobID()
	task := mkJob(v2, "job_"+id)
	defer rmJob(v2, "job_"+id)
	props, _ := os.MkdirTemp("", "jsx-props")
	defer os.RemoveAll(props)
	if err := os.WriteFile(filepath.Join(props, id), []byte(fmt.Sprintf(
		"SLURM_JOB_ID=%s\nSLURM_JOB_USER=root\nSLURM_JOB_UID=0\nSLURM_JOB_ACCOUNT=matrix\nSLURM_JOB_PARTITION=test\n", id)), 0o644); err != nil {
		fail("job properties: %v", err)
		return
	}
	pin := "/sys/fs/bpf/jobscope_matrix_" + id
	defer os.RemoveAll(pin)
	// A free port (this machine runs other exporters).
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fail("%v", err)
		return
	}
	addr := ln.Addr().String()
	ln.Close()
	cmd := exec.Command(bin, "--web.listen-address="+addr, "--slurm.job-props-dir="+props,
		"--slurm.scontrol-fallback=false", "--bpf.pin-path="+pin,
		// Full: syscall IO per job is a full-level family, and the matrix
		// proves every series the programs feed on every kernel.
		"--metrics.level=full")
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		fail("start: %v", err)
		return
	}
	var logWG sync.WaitGroup
	logWG.Add(1)
	go func() {
		defer logWG.Done()
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if strings.Contains(sc.Text(), "ebpf") {
				p.Log = append(p.Log, sc.Text())
			}
		}
	}()
	defer func() {
		// Its exit status after SIGTERM says nothing the scrape did not.
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
		logWG.Wait()
	}()
	if _, err := scrape(addr, 90*time.Second); err != nil {
		fail("never served /metrics: %v", err)
		return
	}
	p.Served = true

	burn, err := startIn(task, "burn", nil, "JSX_FOR=2s", fmt.Sprintf("JSX_CPU=%d", burnCPU))
	if err == nil {
		_ = burn.Wait() // killed by its own timer
	}
	hold, holdIn := io.Pipe()
	waiter, err := startIn(task, "wait", hold)
	if err != nil {
		fail("live process: %v", err)
		return
	}
	defer func() { holdIn.Close(); _ = waiter.Wait() }()
	time.Sleep(200 * time.Millisecond)
	mfs, err := scrape(addr, 30*time.Second)
	if err != nil {
		fail("scrape: %v", err)
		return
	}
	p.CPUStat = float64(usage(task)) / 1e9
	p.Success = map[string]float64{}
	fams := map[string]bool{}
	for name, mf := range mfs {
		for _, m := range mf.Metric {
			lv := labels(m)
			switch {
			case name == "jobscope_scrape_collector_success":
				p.Success[lv["collector"]] = m.GetGauge().GetValue()
			case lv["jobid"] == id && strings.HasPrefix(name, "slurm_job_"):
				fams[name] = true
				if name == "slurm_job_cpu_core_seconds_total" {
					p.PerCore += m.GetCounter().GetValue()
				}
			}
		}
	}
	for f := range fams {
		p.Families = append(p.Families, f)
	}
	sort.Strings(p.Families)
	for _, c := range []string{"cgroup", "process"} {
		if p.Success[c] != 1 {
			fail("collector %s success %v, want 1 whatever eBPF can do", c, p.Success[c])
		}
	}
	if p.Success["ebpf"] == 1 && math.Abs(p.PerCore-p.CPUStat) > 0.01*p.CPUStat {
		fail("per-core sum %.6f s, cpu.stat %.6f s", p.PerCore, p.CPUStat)
	}
	if p.Success["ebpf"] == 1 && r.Direct == nil || p.Success["ebpf"] != 1 && r.Direct != nil {
		fail("ebpf collector success %v, but the programs loaded directly: %v", p.Success["ebpf"], r.Direct != nil)
	}
}

func scrape(addr string, wait time.Duration) (map[string]*dto.MetricFamily, error) {
	deadline := time.Now().Add(wait)
	for {
		resp, err := http.Get("http://" + addr + "/metrics")
		if err == nil {
			defer resp.Body.Close()
			p := expfmt.NewTextParser(model.UTF8Validation)
			return p.TextToMetricFamilies(resp.Body)
		}
		if time.Now().After(deadline) {
			return nil, err
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func labels(m *dto.Metric) map[string]string {
	out := map[string]string{}
	for _, l := range m.Label {
		out[l.GetName()] = l.GetValue()
	}
	return out
}
