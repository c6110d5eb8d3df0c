// SPDX-License-Identifier: Apache-2.0

package report

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/jobscope/jobscope/slurmcli/slurmclitest"
)

// The recorded fixture (testdata/report/prometheus.json) holds a real
// Prometheus 2.42's answers over the jobs below: their series, in the
// exporter's names and labels, backfilled with promtool, and the
// jobscope-usage rules evaluated over them (`go test -run TestRecord
// -record`, see record_test.go).

// scenarioNow is when the recorded reports were made.
var scenarioNow = time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC)

const scrapeEvery = 15 * time.Second

type simGPU struct {
	index string
	util  float64 // mean utilisation; 0 is an idle GPU
	mem   float64
}

type simNode struct {
	name      string
	coreLoad  []float64 // busy fraction of each allocated core at full speed
	memLimit  float64
	memPeak   float64 // reached at the end of the job (or at the OOM kill)
	oomAt     float64 // fraction of the job's life; 0: never
	syscalls  float64 // per second
	callBytes float64
	storage   float64 // bytes per second
	net       float64 // bytes per second
	gpus      []simGPU
	ipmi      bool
	watts     float64
	procs     float64
}

type simJob struct {
	id, user, account, partition, name, cluster, exe string
	start, end                                       time.Time
	nodes                                            []simNode
	infoOnly                                         bool // the cgroup collector was off: slurm_job_info alone
	// unlabeled: the first scrapes had no metadata yet (user, account and
	// job_key empty), as discovery exports a job before it knows them.
	unlabeled time.Duration
	// seenFrom: the first scrape, later than the start for a job already
	// running when jobscope was first scraped (its counters start high).
	seenFrom time.Time
	// missed: scrapes in [missed[0], missed[1]) never happened (Prometheus
	// or the node was down).
	missed [2]time.Time
}

func (j simJob) key() string { return fmt.Sprintf("%s/%s/%d", j.cluster, j.id, j.start.Unix()) }

func cores(n int, load float64) []float64 {
	c := make([]float64, n)
	for i := range c {
		c[i] = load
	}
	return c
}

// scenarioJobs: what each job exercises is in its comment.
func scenarioJobs() []simJob {
	at := func(s string) time.Time {
		t, err := time.Parse(time.RFC3339, s)
		if err != nil {
			panic(err)
		}
		return t
	}
	const gib = 1 << 30
	return []simJob{
		// Two nodes, one idle; four GPUs, three idle; heavy small IO; waited
		// 3 h (sacct); IPMI on one node, RAPL on the other.
		{id: "4242", user: "alice", account: "physics", partition: "gpu", name: "train", cluster: "c1",
			exe: "/home/alice/venv/bin/python3.11", start: at("2026-03-02T10:00:00Z"), end: at("2026-03-02T11:30:00Z"),
			nodes: []simNode{
				{name: "n01", coreLoad: cores(8, 0.9), memLimit: 64 * gib, memPeak: 20 * gib, syscalls: 5000, callBytes: 512,
					storage: 2 << 20, net: 10 << 20, ipmi: true, watts: 400, procs: 4,
					gpus: []simGPU{{index: "0", util: 0.8, mem: 30 * gib}, {index: "1", util: 0, mem: 0}}},
				{name: "n02", coreLoad: cores(8, 0.002), memLimit: 64 * gib, memPeak: 1 * gib, syscalls: 10, callBytes: 4096,
					watts: 150, procs: 1, gpus: []simGPU{{index: "0", util: 0}, {index: "1", util: 0}}},
			}},
		// Job id 777 used twice (a slurmctld state reset): ten days ago by bob,
		// now by dave, still running, one busy core of sixteen, memory unused.
		{id: "777", user: "bob", account: "chemistry", partition: "cpu", name: "old", cluster: "c1",
			exe: "/home/bob/bin/md", start: at("2026-02-20T08:00:00Z"), end: at("2026-02-20T09:00:00Z"),
			nodes: []simNode{{name: "n03", coreLoad: cores(4, 0.95), memLimit: 8 * gib, memPeak: 6 * gib, watts: 200, procs: 4}}},
		{id: "777", user: "dave", account: "chemistry", partition: "cpu", name: "solver", cluster: "c1",
			exe: "/home/dave/bin/solver", start: at("2026-03-02T10:00:00Z"), end: scenarioNow,
			nodes: []simNode{{name: "n03", coreLoad: append([]float64{0.98}, cores(15, 0.001)...), memLimit: 32 * gib,
				memPeak: 1 * gib, watts: 180, procs: 2}}},
		// OOM killed at 90% of its life; its first two minutes of series
		// carry no metadata yet.
		{id: "555", user: "bob", account: "chemistry", partition: "cpu", name: "bigmem", cluster: "c1",
			exe: "/usr/bin/perl", start: at("2026-03-01T09:00:00Z"), end: at("2026-03-01T09:20:00Z"), unlabeled: 2 * time.Minute,
			nodes: []simNode{{name: "n04", coreLoad: cores(2, 0.9), memLimit: 2 * gib, memPeak: 2 * gib, oomAt: 0.9,
				watts: 120, procs: 1}}},
		// Only slurm_job_info: a node whose cgroup collector was off.
		{id: "902", user: "alice", account: "physics", partition: "cpu", name: "blind", cluster: "c1",
			start: at("2026-03-01T14:00:00Z"), end: at("2026-03-01T14:30:00Z"), infoOnly: true,
			nodes: []simNode{{name: "n06", coreLoad: cores(1, 1)}}},
		// Alice's small efficient jobs, for the usage summary.
		{id: "4300", user: "alice", account: "physics", partition: "cpu", name: "fit", cluster: "c1",
			exe: "/home/alice/bin/fit", start: at("2026-02-25T06:00:00Z"), end: at("2026-02-25T06:30:00Z"),
			nodes: []simNode{{name: "n04", coreLoad: cores(4, 0.97), memLimit: 8 * gib, memPeak: 5 * gib, watts: 220, procs: 4}}},
		{id: "4301", user: "alice", account: "chemistry", partition: "cpu", name: "fit", cluster: "c1",
			exe: "/home/alice/bin/fit", start: at("2026-02-26T06:00:00Z"), end: at("2026-02-26T07:00:00Z"),
			nodes: []simNode{{name: "n05", coreLoad: cores(2, 0.3), memLimit: 4 * gib, memPeak: 0.5 * gib, watts: 150, procs: 2}}},
	}
}

// coreSeconds is the CPU time of a core of busy fraction load after e
// seconds, with a 10-minute warm-up ramp (so the charts have a shape).
func coreSeconds(load, e float64) float64 {
	const ramp = 600.0
	if e < ramp {
		return load * e * e / (2 * ramp)
	}
	return load * (e - ramp/2)
}

type omWriter struct{ fam map[string][]string }

func (w *omWriter) add(name string, labels map[string]string, t time.Time, v float64) {
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%s=%q", k, labels[k])
	}
	w.fam[name] = append(w.fam[name], fmt.Sprintf("%s{%s} %g %d", name, b.String(), v, t.Unix()))
}

// writeOpenMetrics writes every series of the scenario for promtool's
// backfill: families kept together, each series in time order.
func writeOpenMetrics(out io.Writer, jobs []simJob) error {
	w := &omWriter{fam: map[string][]string{}}
	for _, j := range jobs {
		for _, n := range j.nodes {
			simSeries(w, j, n)
		}
	}
	bw := bufio.NewWriter(out)
	names := make([]string, 0, len(w.fam))
	for n := range w.fam {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(bw, "# TYPE %s gauge\n", n)
		for _, l := range w.fam[n] {
			fmt.Fprintln(bw, l)
		}
	}
	fmt.Fprintln(bw, "# EOF")
	return bw.Flush()
}

func simSeries(w *omWriter, j simJob, n simNode) {
	life := j.end.Sub(j.start).Seconds()
	for t := j.start.Add(5 * time.Second); !t.After(j.end); t = t.Add(scrapeEvery) {
		if t.Before(j.seenFrom) || !t.Before(j.missed[0]) && t.Before(j.missed[1]) {
			continue
		}
		user, account, key, source := j.user, j.account, j.key(), "props"
		if t.Sub(j.start) < j.unlabeled {
			user, account, key, source = "", "", "", "none"
		}
		base := func(extra ...string) map[string]string {
			l := map[string]string{"jobid": j.id, "user": user, "account": account, "instance": n.name, "job": "jobscope"}
			for i := 0; i+1 < len(extra); i += 2 {
				l[extra[i]] = extra[i+1]
			}
			return l
		}
		e := t.Sub(j.start).Seconds()
		f := e / life
		w.add(mInfo, base("partition", j.partition, "qos", "normal", "name", j.name, "cluster", j.cluster,
			"array_job_id", "", "array_task_id", "", "job_key", key, "cgroup_version", "2", "metadata_source", source), t, 1)
		if j.infoOnly {
			continue
		}
		var cpu float64
		for c, load := range n.coreLoad {
			s := coreSeconds(load, e)
			cpu += s
			w.add(mCPUCore, base("core", fmt.Sprint(c)), t, s)
		}
		w.add(mCPUUsage, base(), t, cpu)
		w.add(mCPUMode, base("mode", "user"), t, cpu*0.95)
		w.add(mCPUMode, base("mode", "system"), t, cpu*0.05)
		w.add(mCPUs, base(), t, float64(len(n.coreLoad)))
		w.add(mCPUThrottled, base(), t, 0)
		mem := n.memPeak * math.Min(1, 0.2+f)
		oom := 0.0
		if n.oomAt > 0 && f >= n.oomAt {
			mem, oom = n.memPeak*0.3, 1
		}
		peak := n.memPeak * math.Min(1, 0.2+math.Min(f, map[bool]float64{true: n.oomAt, false: 1}[n.oomAt > 0]))
		w.add(mMemUsage, base(), t, mem)
		w.add(mMemPeak, base(), t, math.Max(peak, mem))
		w.add(mMemLimit, base(), t, n.memLimit)
		w.add(mMemStat, base("type", "anon"), t, mem*0.9)
		w.add(mMemStat, base("type", "file"), t, mem*0.1)
		w.add(mMemSwap, base(), t, 0)
		w.add(mMemEvents, base("event", "oom_kill"), t, oom)
		w.add(mMemEvents, base("event", "max"), t, oom*3)
		for res, share := range map[string]float64{"cpu": 0.02, "memory": 0.01 + oom*0.3, "io": 0.005} {
			w.add(mPressure, base("resource", res, "level", "some"), t, share*e)
			w.add(mPressure, base("resource", res, "level", "full"), t, share*e/2)
		}
		for dir, share := range map[string]float64{"read": 0.6, "write": 0.4} {
			w.add(mBlockIO, base("device", "nvme0n1", "direction", dir), t, n.storage*share*e*0.8)
			w.add(mStorageIO, base("direction", dir), t, n.storage*share*e)
			w.add(mSyscallIO, base("direction", dir), t, n.syscalls*n.callBytes*share*e)
			w.add(mSyscalls, base("direction", dir), t, n.syscalls*share*e)
		}
		w.add(mNetwork, base("direction", "receive"), t, n.net*e)
		w.add(mNetwork, base("direction", "transmit"), t, n.net*e/3)
		w.add(mProcesses, base("state", "running"), t, math.Min(n.procs, 2))
		w.add(mProcesses, base("state", "sleeping"), t, math.Max(n.procs-2, 0)+1)
		w.add(mThreads, base("state", "all"), t, n.procs*4+1)
		w.add(mOpenFDs, base(), t, n.procs*12+8)
		w.add(mProcessCPU, base("exe", j.exe), t, cpu*0.98)
		w.add(mProcessCPU, base("exe", "other"), t, cpu*0.02)
		var gpuJ float64
		for _, g := range n.gpus {
			gl := []string{"gpu", g.index, "uuid", "GPU-" + n.name + "-" + g.index, "model", "NVIDIA A100-SXM4-40GB", "mig_uuid", ""}
			util := 0.0
			if g.util > 0 {
				util = math.Min(1, g.util*(1+0.15*math.Sin(e/300)))
			}
			gpuJ += (60 + 300*g.util) * e
			w.add(mGPUInfo, base(append(gl, "method", "mapping_dir")...), t, 1)
			w.add(mGPUUtil, base(gl...), t, util)
			w.add(mGPUMemUsed, base(gl...), t, g.mem*math.Min(1, f*4))
			w.add(mGPUMemTotal, base(gl...), t, 40<<30)
			w.add(mGPUSMActive, base(gl...), t, util*0.7)
			w.add(mGPUTensor, base(gl...), t, util*0.3)
		}
		host := n.watts * e
		if n.ipmi {
			w.add(mEnergy, base("source", "ipmi"), t, host)
		}
		w.add(mEnergy, base("source", "rapl_cpu"), t, host*0.7)
		w.add(mEnergy, base("source", "rapl_dram"), t, host*0.1)
		w.add(mEnergy, base("source", "gpu"), t, gpuJ)
		w.add(mEmissions, base(), t, (host+gpuJ)/3.6e6*50)
	}
}

// sacctLines is what the fake sacct prints for each job id (times UTC).
var sacctLines = map[string][]string{
	"4242": {"4242|train|alice|physics|gpu|c1|COMPLETED|0:0|2026-03-02T07:00:00|2026-03-02T10:00:00|2026-03-02T11:30:00|5400|1440|16|billing=16,cpu=16,gres/gpu=4,mem=128G,node=2|2|n[01-02]|22:00:00|86400"},
	"777": {
		"777|old|bob|chemistry|cpu|c1|COMPLETED|0:0|2026-02-20T07:59:00|2026-02-20T08:00:00|2026-02-20T09:00:00|3600|120|4|cpu=4,mem=8G,node=1|1|n03|03:48:00|14400",
		"777|solver|dave|chemistry|cpu|c1|RUNNING|0:0|2026-03-02T09:59:30|2026-03-02T10:00:00|Unknown|7200|1440|16|cpu=16,mem=32G,node=1|1|n03|00:00:00|115200",
	},
	"555": {"555|bigmem|bob|chemistry|cpu|c1|OUT_OF_MEMORY|0:125|2026-03-01T08:59:00|2026-03-01T09:00:00|2026-03-01T09:20:00|1200|60|2|cpu=2,mem=2G,node=1|1|n04|00:30:00|2400"},
	"901": {"901|lost|alice|physics|cpu|c1|COMPLETED|0:0|2026-03-01T10:00:00|2026-03-01T10:01:00|2026-03-01T11:01:00|3600|120|1|cpu=1,mem=1G,node=1|1|n09|00:50:00|3600"},
}

// fakeSacctScript answers `sacct ... -j ID ...` from sacctLines, with the
// --delimiter the run asked for.
func fakeSacctScript() string {
	var b strings.Builder
	b.WriteString(slurmclitest.FindSep + "\n{\n")
	b.WriteString("echo 'JobIDRaw|JobName|User|Account|Partition|Cluster|State|ExitCode|Submit|Start|End|ElapsedRaw|TimelimitRaw|AllocCPUS|AllocTRES|NNodes|NodeList|TotalCPU|CPUTimeRAW'\n")
	b.WriteString("while [ $# -gt 0 ]; do [ \"$1\" = -j ] && id=$2; shift; done\ncase $id in\n")
	ids := make([]string, 0, len(sacctLines))
	for id := range sacctLines {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		fmt.Fprintf(&b, "%s)\n", id)
		for _, l := range sacctLines[id] {
			fmt.Fprintf(&b, "\techo '%s'\n", l)
		}
		b.WriteString("\t;;\n")
	}
	b.WriteString("esac\n} | " + slurmclitest.ToSep(19) + "\n")
	return b.String()
}
