// SPDX-License-Identifier: Apache-2.0

// Command gpucheck drives jobscope against a real NVIDIA GPU (test/gpu/run.sh
// runs it on a lent GPU machine): job-shaped cgroups holding a real CUDA
// load, two jobscope instances (prolog mapping file; environment and process
// mapping), nvidia-smi as ground truth, and a table of assertions.
package main

import (
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

type instance struct {
	name, addr string
	cmd        *exec.Cmd
}

func startJobscope(bin, name, addr, out string, args ...string) (*instance, error) {
	logf, err := os.Create(filepath.Join(out, "jobscope-"+name+".log"))
	if err != nil {
		return nil, err
	}
	args = append([]string{"--web.listen-address=" + addr, "--log.level=debug"}, args...)
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	in := &instance{name: name, addr: addr, cmd: cmd}
	for i := 0; i < 100; i++ {
		if _, err := getMetrics(addr); err == nil {
			return in, nil
		}
		time.Sleep(200 * time.Millisecond)
	}
	return in, fmt.Errorf("jobscope %s did not answer on %s", name, addr)
}

func (in *instance) stop() {
	if in != nil && in.cmd.Process != nil {
		_ = in.cmd.Process.Signal(os.Interrupt) // gone already: Wait returns at once
		done := make(chan struct{})
		go func() { _ = in.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = in.cmd.Process.Kill()
		}
	}
}

// phase is a stretch of time in which the GPU did one thing.
type phase struct {
	name     string
	from, to time.Time
	scrapes  map[string][]*scrape // by instance
}

func (p *phase) vals(inst, name string, want map[string]string, skip int) []float64 {
	var out []float64
	for i, s := range p.scrapes[inst] {
		if i < skip {
			continue
		}
		if v, ok := s.value(name, want); ok {
			out = append(out, v)
		}
	}
	return out
}

func (p *phase) last(inst string) *scrape {
	ss := p.scrapes[inst]
	if len(ss) == 0 {
		return nil
	}
	return ss[len(ss)-1]
}

// observe scrapes every instance once a second for d.
func observe(name string, d time.Duration, insts ...*instance) *phase {
	p := &phase{name: name, from: time.Now(), scrapes: map[string][]*scrape{}}
	end := p.from.Add(d)
	for time.Now().Before(end) {
		tick := time.Now()
		for _, in := range insts {
			s, err := getMetrics(in.addr)
			if err != nil {
				log.Printf("phase %s: scrape %s: %v", name, in.name, err)
				continue
			}
			p.scrapes[in.name] = append(p.scrapes[in.name], s)
		}
		time.Sleep(time.Second - time.Since(tick))
	}
	p.to = time.Now()
	log.Printf("phase %s: %s, %d scrapes", name, p.to.Sub(p.from).Round(time.Millisecond), len(p.scrapes[insts[0].name]))
	return p
}

func must(err error) {
	if err != nil {
		log.Fatal(err)
	}
}

func main() { os.Exit(run()) }

// run is the check; main exits with its status once the deferred stops ran.
func run() int {
	bin := flag.String("jobscope", ".gpurun/jobscope", "jobscope binary")
	load := flag.String("load", "/tmp/gpuload", "gpuload binary")
	out := flag.String("out", os.Getenv("OUT"), "results directory")
	work := flag.String("work", "/tmp/jsgpu", "scratch directory")
	allocMiB := flag.Int("alloc-mib", 8192, "device memory the load allocates")
	busy := flag.Duration("busy", 25*time.Second, "FP32 load phase")
	tensor := flag.Duration("tensor", 20*time.Second, "tensor-core load phase")
	gpuFlags := flag.String("gpu-flags", "--gpu.backend=nvml", "jobscope GPU flags (a dry run without a GPU uses the fake backend)")
	dump := flag.String("dump", "", "only scrape this address twice, 3 s apart, and print its GPU series")
	flag.Parse()
	if *dump != "" {
		dumpOnly(*dump)
		return 0
	}
	logf, err := os.Create(filepath.Join(*out, "gpucheck.log"))
	must(err)
	log.SetOutput(logf)
	log.SetFlags(log.Lmicroseconds)
	os.RemoveAll(*work)
	props, noprops, mapdir := filepath.Join(*work, "props"), filepath.Join(*work, "noprops"), filepath.Join(*work, "map")
	for _, d := range []string{props, noprops, mapdir} {
		must(os.MkdirAll(d, 0o755))
	}
	cg := detectCgroups()
	log.Printf("cgroups: v2=%q v1=%v (job layout v2: %v)", cg.V2, cg.V1, cg.useV2())

	smi, err := startSMI(100)
	must(err)
	defer smi.stop()
	log.Printf("nvidia-smi query: %s", smi.Query)

	common := append(strings.Fields(*gpuFlags), "--slurm.node-metadata.squeue=false")
	a, err := startJobscope(*bin, "a", "127.0.0.1:19901", *out, append(common,
		"--gpu.job-mapping-dir="+mapdir, "--slurm.job-props-dir="+props, "--bpf.pin-path=/sys/fs/bpf/jobscope-gpu")...)
	defer a.stop()
	must(err)
	b, err := startJobscope(*bin, "b", "127.0.0.1:19902", *out, append(common,
		"--slurm.job-props-dir="+noprops, "--collector.ebpf=false")...)
	defer b.stop()
	must(err)

	r := &report{}
	// No job yet: the GPU belongs to nobody and shows as jobscope_gpu_*.
	free0 := observe("no-job", 4*time.Second, a)
	uuid := free0.last("a").label("jobscope_gpu_info", nil, "uuid")
	r.check("GPU with no job: jobscope_gpu_info present", "1 series", fmt.Sprint(len(free0.last("a").series("jobscope_gpu_info"))), uuid != "")
	lost, lok := free0.last("a").value("jobscope_gpu_lost", map[string]string{"uuid": uuid})
	r.check("healthy GPU: jobscope_gpu_lost", "0", fmt.Sprint(lost), lok && lost == 0)
	age, aok := free0.last("a").value("jobscope_gpu_snapshot_age_seconds", nil)
	r.check("values read now: jobscope_gpu_snapshot_age_seconds", "0", fmt.Sprint(age), aok && age == 0)

	// Job 4242: prolog props and mapping file, GPU variables in its environment.
	must(os.WriteFile(filepath.Join(props, "4242"), []byte("SLURM_JOB_ID=4242\nSLURM_JOB_USER=root\nSLURM_JOB_UID=0\nSLURM_JOB_ACCOUNT=gpuacct\nSLURM_JOB_PARTITION=gpu\nSLURM_JOB_GPUS=0\n"), 0o644))
	must(os.WriteFile(filepath.Join(mapdir, "0"), []byte("4242\n"), 0o644))
	env := append(os.Environ(), "SLURM_JOB_ID=4242", "SLURM_JOB_USER=root", "SLURM_JOB_ACCOUNT=gpuacct", "CUDA_VISIBLE_DEVICES=0", "SLURM_JOB_GPUS=0")
	j1, err := startLoad(cg, *load, "4242", env, logf)
	must(err)
	_, err = j1.do("start", "meminfo context", 60*time.Second)
	must(err)
	ctx := observe("context", 5*time.Second, a, b)
	allocLine, err := j1.do(fmt.Sprintf("alloc %d", *allocMiB), "meminfo allocated", 60*time.Second)
	must(err)
	allocIdle := observe("allocated-idle", 6*time.Second, a, b)
	askLine, err := j1.do("meminfo", "meminfo asked", 10*time.Second)
	must(err)
	memScrape, err := getMetrics(a.addr)
	must(err)
	_, err = j1.do(fmt.Sprintf("busy %g", busy.Seconds()), "begin busy", 10*time.Second)
	must(err)
	busyP := observe("busy", *busy-time.Second, a, b)
	_, err = j1.do("", "end busy", 30*time.Second)
	must(err)
	_, err = j1.do(fmt.Sprintf("tensor %g", tensor.Seconds()), "begin tensor", 10*time.Second)
	must(err)
	tensorP := observe("tensor", *tensor-time.Second, a, b)
	_, err = j1.do("", "end tensor", 30*time.Second)
	must(err)
	idleP := observe("allocated-idle-after", 10*time.Second, a, b)
	j1.stop()
	os.Remove(filepath.Join(mapdir, "0"))

	// Job 4243: no GPU variables anywhere; only NVML's process list maps it.
	must(os.WriteFile(filepath.Join(props, "4243"), []byte("SLURM_JOB_ID=4243\nSLURM_JOB_USER=root\nSLURM_JOB_UID=0\nSLURM_JOB_ACCOUNT=gpuacct\n"), 0o644))
	j2, err := startLoad(cg, *load, "4243", append(os.Environ(), "SLURM_JOB_ID=4243"), logf)
	must(err)
	_, err = j2.do("start", "meminfo context", 60*time.Second)
	must(err)
	_, err = j2.do("busy 8", "begin busy", 10*time.Second)
	must(err)
	procP := observe("process-mapped", 7*time.Second, a, b)
	_, _ = j2.do("", "end busy", 30*time.Second) // the job ends with stop either way
	j2.stop()

	// Job 4244: Slurm with gres.conf Flags=env_uuid puts UUIDs in the environment.
	j3, err := startLoad(cg, *load, "4244", append(os.Environ(), "SLURM_JOB_ID=4244", "CUDA_VISIBLE_DEVICES="+uuid, "SLURM_JOB_GPUS="+uuid), logf)
	must(err)
	_, err = j3.do("start", "meminfo context", 60*time.Second)
	must(err)
	uuidP := observe("uuid-env", 4*time.Second, b)
	j3.stop()
	free1 := observe("no-job-after", 4*time.Second, a)

	// Scrape cost: the gpu collector alone, back to back.
	c, err := startJobscope(*bin, "c", "127.0.0.1:19903", *out, append(common,
		"--collector.cgroup=false", "--collector.process=false", "--collector.power=false", "--collector.ebpf=false")...)
	must(err)
	var gpuDur, httpDur []float64
	for i := 0; i < 60; i++ {
		s, err := getMetrics(c.addr)
		if err != nil {
			continue
		}
		httpDur = append(httpDur, s.Took.Seconds())
		if v, ok := s.value("jobscope_scrape_collector_duration_seconds", map[string]string{"collector": "gpu"}); ok {
			gpuDur = append(gpuDur, v)
		}
		time.Sleep(100 * time.Millisecond)
	}
	c.stop()

	evaluate(r, evalInput{
		uuid: uuid, smi: smi, ctx: ctx, allocIdle: allocIdle, busy: busyP, tensor: tensorP, idle: idleP,
		proc: procP, uuidEnv: uuidP, free1: free1, allocLine: allocLine, askLine: askLine, memScrape: memScrape,
		allocMiB: *allocMiB, gpus: len(free0.last("a").series("jobscope_gpu_info")), gpuDur: gpuDur, httpDur: httpDur,
	})
	dumpSeries(filepath.Join(*out, "series-busy-a.txt"), busyP.last("a"))
	dumpSeries(filepath.Join(*out, "series-idle-b.txt"), idleP.last("b"))
	dumpSeries(filepath.Join(*out, "series-nojob-a.txt"), free1.last("a"))
	table := r.table()
	fmt.Print(table)
	writeOut(filepath.Join(*out, "gpu-report.md"), table)
	if r.fails > 0 {
		return 1
	}
	return 0
}

func dumpSeries(path string, s *scrape) {
	if s == nil {
		return
	}
	var b strings.Builder
	for _, p := range []string{"slurm_job_gpu", "jobscope_gpu", "jobscope_collector_errors", "jobscope_scrape_collector", "slurm_job_info", "jobscope_power", "slurm_job_energy", "slurm_job_power"} {
		for _, l := range s.series(p) {
			b.WriteString(l + "\n")
		}
	}
	writeOut(path, b.String())
}

// writeOut saves one artefact of the run; a failure is said, the checks go on.
func writeOut(path, s string) {
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "gpucheck:", err)
	}
}

// dumpOnly prints the GPU series of a running jobscope (the DCGM check).
func dumpOnly(addr string) {
	for i := 0; i < 2; i++ {
		time.Sleep(3 * time.Second)
		s, err := getMetrics(addr)
		if err != nil {
			fmt.Println("scrape:", err)
			continue
		}
		for _, p := range []string{"slurm_job_gpu", "jobscope_gpu", "jobscope_collector_errors", "jobscope_scrape_collector"} {
			for _, l := range s.series(p) {
				fmt.Println(l)
			}
		}
		fmt.Println("---")
	}
}
