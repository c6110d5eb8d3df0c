// SPDX-License-Identifier: Apache-2.0

// Package clustergen writes a simulated Slurm cluster of N nodes and M jobs
// as the outputs of the commands controller mode runs, with fake commands
// that print them, for benchmarks of parsing and emitting at scale. Its job
// and node records are real 22.05 records (testdata/slurm/22.05, the busy
// capture) with their ids, names, states and resources varied.
package clustergen

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/jobscope/jobscope/slurmcli/slurmclitest"
)

// Shape is the cluster to simulate.
type Shape struct {
	Nodes, Jobs int
	// Partitions, Users and Accounts are how many of each the jobs and
	// nodes spread over.
	Partitions, Users, Accounts int
}

// Default is a busy site: 2,000 nodes, 50,000 jobs.
var Default = Shape{Nodes: 2000, Jobs: 50000, Partitions: 8, Users: 400, Accounts: 60}

var reasons = []string{"Priority", "Resources", "JobHeldUser", "Dependency", "QOSMaxCpuPerUserLimit", "BeginTime", "AssocGrpCPUMinutesLimit", "Licenses"}

// Write puts the outputs in dir and the fake commands in dir/bin, from the
// real records in testdata (the path of testdata/slurm/22.05). The squeue
// script prints the -O text (controller mode today), the -o text (before
// it), or JSON, as its arguments ask.
func Write(dir, testdata string, s Shape) error {
	bin := filepath.Join(dir, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		return err
	}
	var sq struct {
		Jobs []map[string]any `json:"jobs"`
	}
	var si struct {
		Nodes []map[string]any `json:"nodes"`
	}
	if err := readJSON(filepath.Join(testdata, "squeue-busy.json"), &sq); err != nil {
		return err
	}
	if err := readJSON(filepath.Join(testdata, "sinfo-busy.json"), &si); err != nil {
		return err
	}
	var jobTmpl map[string]any
	for _, j := range sq.Jobs {
		if j["job_id"] == float64(2) { // a running job: every field set
			jobTmpl = j
		}
	}
	if jobTmpl == nil || len(si.Nodes) == 0 {
		return fmt.Errorf("%s: the busy capture lacks job 2 or its node", testdata)
	}
	nodeNames := make([]string, s.Nodes)
	for i := range nodeNames {
		nodeNames[i] = fmt.Sprintf("n%04d", i+1)
	}
	if err := writeNodes(dir, si.Nodes[0], nodeNames, s); err != nil {
		return err
	}
	if err := writeJobs(dir, jobTmpl, nodeNames, s); err != nil {
		return err
	}
	for _, f := range []string{"sshare-busy.txt", "sdiag-busy.txt", "scontrol-show-res-busy.txt", "scontrol-show-lic-busy.txt",
		"sacct-X-busy.txt", "scontrol-show-res-busy.json.stderr"} {
		b, err := os.ReadFile(filepath.Join(testdata, f))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			return err
		}
	}
	q := func(n string) string { return "'" + filepath.Join(dir, n) + "'" }
	scripts := map[string]string{
		// The -O text with the separator the run asked for.
		"squeue": slurmclitest.FindSep + "\n" + `case "$*" in *--json*) exec cat ` + q("squeue.json") + `;; *" -O "*) ` +
			slurmclitest.ToSep(18) + " " + q("squeue-O.txt") + `;; *) exec cat ` + q("squeue-o.txt") + `;; esac`,
		"sinfo": "exec cat " + q("sinfo.json"),
		"scontrol": `case "$*" in *--json*) cat ` + q("scontrol-show-res-busy.json.stderr") + ` >&2; exit 1;;
*reservation*) exec cat ` + q("scontrol-show-res-busy.txt") + `;; *licenses*) exec cat ` + q("scontrol-show-lic-busy.txt") + `;;
*) exec cat ` + q("scontrol-node.txt") + `;; esac`,
		"sshare": "exec cat " + q("sshare-busy.txt"),
		"sdiag":  "exec cat " + q("sdiag-busy.txt"),
		"sacct":  "exec cat " + q("sacct-X-busy.txt"),
	}
	for name, body := range scripts {
		if err := os.WriteFile(filepath.Join(bin, name), []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
			return err
		}
	}
	return nil
}

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

func writeNodes(dir string, tmpl map[string]any, names []string, s Shape) error {
	nodes := make([]map[string]any, len(names))
	var text bytes.Buffer
	for i, name := range names {
		n := clone(tmpl)
		part := fmt.Sprintf("p%d", i%s.Partitions)
		parts := []any{part}
		if i%5 == 0 { // a fifth of the nodes also serve a second partition
			parts = append(parts, fmt.Sprintf("p%d", (i+1)%s.Partitions))
		}
		state, flags, reason, alloc := "allocated", []any{}, "", 64.0
		switch {
		case i%40 == 0:
			state, flags, reason, alloc = "idle", []any{"DRAIN"}, fmt.Sprintf("ECC errors on DIMM %d, ticket %d", i%16, 1000+i), 0
		case i%97 == 0:
			state, reason, alloc = "down", "Not responding", 0
		case i%7 == 0:
			state, alloc = "mixed", 32
		case i%11 == 0:
			state, alloc = "idle", 0
		}
		n["name"], n["hostname"], n["partitions"], n["state"], n["state_flags"] = name, name, parts, state, flags
		n["reason"], n["cpus"], n["alloc_cpus"], n["real_memory"], n["alloc_memory"] = reason, 64, alloc, 256000, alloc*3900
		n["cpu_load"], n["free_memory"] = int(alloc)*100+i%100, 100000+i
		n["tres"] = "cpu=64,mem=256000M,billing=64"
		n["tres_used"] = fmt.Sprintf("cpu=%d,mem=%dM", int(alloc), int(alloc*3900))
		n["gres"], n["gres_used"] = "", ""
		nodes[i] = n
		st := strings.ToUpper(state)
		if len(flags) > 0 {
			st += "+DRAIN"
		}
		ps := make([]string, len(parts))
		for k, p := range parts {
			ps[k] = p.(string)
		}
		fmt.Fprintf(&text, "NodeName=%s Arch=x86_64 CoresPerSocket=32 CPUAlloc=%d CPUTot=64 CPULoad=%.2f AvailableFeatures=ib,avx512 ActiveFeatures=ib,avx512 Gres=(null) NodeAddr=%s NodeHostName=%s Version=22.05.8 OS=Linux 6.1.0 #1 SMP RealMemory=256000 AllocMem=%d FreeMem=%d Sockets=2 Boards=1 State=%s ThreadsPerCore=1 TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A Partitions=%s BootTime=2026-11-20T08:00:00 SlurmdStartTime=2026-11-20T08:01:00 LastBusyTime=2026-11-25T00:00:00 CfgTRES=cpu=64,mem=256000M,billing=64 AllocTRES=cpu=%d,mem=%dM CapWatts=n/a CurrentWatts=0 AveWatts=0 ExtSensorsJoules=n/s ExtSensorsWatts=0 ExtSensorsTemp=n/s",
			name, int(alloc), float64(int(alloc)*100+i%100)/100, name, name, int(alloc*3900), 100000+i, st, strings.Join(ps, ","), int(alloc), int(alloc*3900))
		if reason != "" {
			fmt.Fprintf(&text, " Reason=%s [root@2026-11-24T10:00:00]", reason)
		}
		text.WriteByte('\n')
	}
	if err := writeJSONFile(filepath.Join(dir, "sinfo.json"), map[string]any{"errors": []any{}, "nodes": nodes}); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "scontrol-node.txt"), text.Bytes(), 0o644)
}

// job is one simulated job, rendered in each form.
type job struct {
	id, arrayJob                           int
	arrayTasks, state, reason, part, nodes string
	user, account, qos                     string
	uid, cpus, memMB, count                int
	submit, start                          int64
}

func writeJobs(dir string, tmpl map[string]any, nodes []string, s Shape) error {
	const now = 1795565616 // the busy capture's time
	jobs := make([]any, 0, s.Jobs)
	var textO, textOld bytes.Buffer
	for i := 0; i < s.Jobs; i++ {
		j := job{id: 100000 + i, part: fmt.Sprintf("p%d", i%s.Partitions), user: fmt.Sprintf("u%03d", i%s.Users),
			account: fmt.Sprintf("a%02d", i%s.Accounts), qos: []string{"normal", "high", "long"}[i%3], uid: 2000 + i%s.Users,
			cpus: 1 << (i % 5), memMB: 4000 * (1 + i%4), count: 1, submit: now - int64(60+i%86400)}
		switch {
		case i%100 < 60:
			j.state, j.reason, j.nodes = "RUNNING", "None", nodes[i%len(nodes)]
			j.start = j.submit + int64(i%3600)
		case i%100 < 95:
			j.state, j.reason = "PENDING", reasons[i%len(reasons)]
			if i%20 == 1 { // an array not yet split
				j.arrayJob, j.arrayTasks, j.count = j.id, "1-20%4", 20
			}
		default:
			j.state, j.reason, j.nodes = "COMPLETED", "None", nodes[i%len(nodes)]
			j.start = j.submit + 30
		}
		jobs = append(jobs, j.json(tmpl))
		if j.state != "COMPLETED" { // squeue's text lists no ended job
			j.writeO(&textO)
			j.writeOld(&textOld)
		}
	}
	if err := writeJSONFile(filepath.Join(dir, "squeue.json"), map[string]any{"errors": []any{}, "jobs": jobs}); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "squeue-O.txt"), textO.Bytes(), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "squeue-o.txt"), textOld.Bytes(), 0o644)
}

func (j job) tres() string {
	return fmt.Sprintf("cpu=%d,mem=%dM,node=1,billing=%d", j.cpus, j.memMB, j.cpus)
}

func (j job) json(tmpl map[string]any) map[string]any {
	m := clone(tmpl)
	m["job_id"], m["job_state"], m["state_reason"], m["state_description"] = j.id, j.state, j.reason, ""
	m["partition"], m["user_name"], m["user_id"], m["account"], m["qos"] = j.part, j.user, j.uid, j.account, j.qos
	m["cpus"], m["node_count"], m["nodes"], m["memory_per_node"] = j.cpus, 1, j.nodes, j.memMB
	m["submit_time"], m["start_time"], m["eligible_time"] = j.submit, j.start, j.submit
	m["tres_req_str"], m["tres_alloc_str"] = j.tres(), ""
	if j.state != "PENDING" {
		m["tres_alloc_str"] = j.tres()
	}
	m["array_job_id"], m["array_task_string"], m["array_task_id"] = j.arrayJob, j.arrayTasks, nil
	m["name"] = fmt.Sprintf("sim-%d", j.id)
	return m
}

// writeO prints the -O line controller mode reads now.
func (j job) writeO(b *bytes.Buffer) {
	start := "N/A"
	if j.start > 0 {
		start = stamp(j.start)
	}
	arrayJob, task := "N/A", "N/A"
	id := fmt.Sprint(j.id)
	if j.arrayJob > 0 {
		arrayJob, task, id = fmt.Sprint(j.arrayJob), j.arrayTasks, fmt.Sprintf("%d_[%s]", j.arrayJob, j.arrayTasks)
	}
	fmt.Fprintf(b, "%s|%d|%s|%s|%s|%s|%s|%s|%d|%s|%s|%d|1|N/A|%s|%s|%s|sim-%d\n", id, j.id, arrayJob, task, j.state, j.reason,
		j.part, j.user, j.uid, j.account, j.qos, j.cpus, j.tres(), stamp(j.submit), start, j.id)
}

// writeOld prints the -o line controller mode read before (its 24 fields).
func (j job) writeOld(b *bytes.Buffer) {
	start := "N/A"
	if j.start > 0 {
		start = stamp(j.start)
	}
	id := fmt.Sprint(j.id)
	if j.arrayJob > 0 {
		id = fmt.Sprintf("%d_[%s]", j.arrayJob, j.arrayTasks)
	}
	fmt.Fprintf(b, "%s|%d|%d|N/A|sim-%d|%s|%s|%s|%s|%d|%s|%s|%d|1|%dM|N/A|1:00:00|0:00|1:00:00|%s|%s|N/A|%s|1\n", id, j.id, j.id, j.id,
		j.state, j.reason, j.part, j.user, j.uid, j.account, j.qos, j.cpus, j.memMB, stamp(j.submit), start, j.nodes)
}

// stamp prints a Unix time as squeue does with SLURM_TIME_FORMAT=standard,
// in UTC (the benchmark runs with TZ=UTC).
func stamp(t int64) string {
	return unixUTC(t).Format("2006-01-02T15:04:05")
}

func unixUTC(t int64) time.Time { return time.Unix(t, 0).UTC() }

func clone(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func writeJSONFile(path string, v any) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := json.NewEncoder(f).Encode(v); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
