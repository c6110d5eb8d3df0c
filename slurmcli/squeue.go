package slurmcli

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Job is one squeue record. A pending job array that Slurm has not split
// yet is one record standing for Count jobs; the resources are per job.
type Job struct {
	ID        string
	State     string // upper case base state: PENDING, RUNNING, ...
	Reason    string
	Partition string
	User      string
	Account   string
	Count     int

	CPUs        float64
	MemoryBytes float64
	GPUs        float64
}

// terminal lists the states of jobs that have left the queue; squeue --json
// keeps showing them for MinJobAge seconds after they end.
var terminal = map[string]bool{
	"COMPLETED": true, "CANCELLED": true, "FAILED": true, "TIMEOUT": true,
	"NODE_FAIL": true, "PREEMPTED": true, "BOOT_FAIL": true, "DEADLINE": true,
	"OUT_OF_MEMORY": true, "REVOKED": true, "SPECIAL_EXIT": true,
}

// InQueue reports whether the job is still pending, running, suspended,
// completing, ...: not one that has ended.
func (j Job) InQueue() bool { return !terminal[j.State] }

// SqueueJSONArgs are the arguments for the JSON form. squeue --json ignores
// state filters in 22.05, so ended jobs are filtered by InQueue instead.
var SqueueJSONArgs = []string{"--json", "--all"}

// squeueTextFormat is the -o format of the text form: | separated, one
// line per array task (-r). It is the format of the 22.05 captures. %j, the
// job name, is the one field users type freely: a | in it shows up as extra
// fields, which are joined back into the name.
const squeueTextFormat = "%i|%A|%F|%K|%j|%T|%r|%P|%u|%U|%a|%q|%C|%D|%m|%b|%l|%M|%L|%V|%S|%e|%N|%Q"

const (
	squeueTextFields = 24
	sqName           = 4
)

// SqueueTextArgs are the arguments for the text form.
var SqueueTextArgs = []string{"-h", "-a", "-r", "-o", squeueTextFormat}

type squeueJSON struct {
	Errors slurmErrors `json:"errors"`
	Jobs   []struct {
		JobID           flexNum     `json:"job_id"`
		State           flexStrings `json:"job_state"`
		Reason          string      `json:"state_reason"`
		Partition       string      `json:"partition"`
		UserName        string      `json:"user_name"`
		UserID          flexNum     `json:"user_id"`
		Account         string      `json:"account"`
		CPUs            flexNum     `json:"cpus"`
		NodeCount       flexNum     `json:"node_count"`
		TresAlloc       string      `json:"tres_alloc_str"`
		TresReq         string      `json:"tres_req_str"`
		TresPerNode     string      `json:"tres_per_node"`
		MemPerNode      flexNum     `json:"memory_per_node"`
		MemPerCPU       flexNum     `json:"memory_per_cpu"`
		ArrayTaskString string      `json:"array_task_string"`
	} `json:"jobs"`
}

// ParseSqueueJSON reads `squeue --json` output (Slurm 22.05 and later).
func ParseSqueueJSON(r io.Reader) ([]Job, error) {
	var in squeueJSON
	if err := decodeSqueue(r, &in, func() bool { return in.Jobs != nil }, func() slurmErrors { return in.Errors }); err != nil {
		return nil, err
	}
	jobs := make([]Job, 0, len(in.Jobs))
	for _, x := range in.Jobs {
		j := Job{
			ID:        strconv.FormatFloat(x.JobID.V, 'f', -1, 64),
			Reason:    x.Reason,
			Partition: Clean(x.Partition),
			User:      Clean(x.UserName),
			Account:   Clean(x.Account),
			Count:     1,
			CPUs:      x.CPUs.V,
		}
		if len(x.State) > 0 {
			j.State = strings.ToUpper(x.State[0])
		}
		if j.User == "" && x.UserID.Set {
			j.User = strconv.FormatFloat(x.UserID.V, 'f', -1, 64)
		}
		if j.State == "PENDING" && x.ArrayTaskString != "" {
			j.Count = ArrayTaskCount(x.ArrayTaskString)
		}
		// Allocated TRES for jobs that have resources, requested otherwise.
		tresStr := x.TresAlloc
		if tresStr == "" {
			tresStr = x.TresReq
		}
		nodes := x.NodeCount.V
		if nodes < 1 {
			nodes = 1
		}
		if tres, err := ParseTRES(tresStr); err == nil && tresStr != "" {
			j.MemoryBytes = tres.MemoryBytes
			j.GPUs = tres.GPUs
			if j.CPUs == 0 {
				j.CPUs = tres.CPUs
			}
		} else {
			switch {
			case x.MemPerNode.Set:
				j.MemoryBytes = x.MemPerNode.V * nodes * (1 << 20)
			case x.MemPerCPU.Set:
				j.MemoryBytes = x.MemPerCPU.V * j.CPUs * (1 << 20)
			}
			j.GPUs = GresGPUs(x.TresPerNode) * nodes
		}
		jobs = append(jobs, j)
	}
	return jobs, nil
}

// ParseSqueueText reads the output of squeue with SqueueTextArgs. Memory is
// the requested minimum per node (%m) times the nodes, and GPUs the
// per-node GPU request (%b) times the nodes: the text form has no TRES.
func ParseSqueueText(r io.Reader) ([]Job, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	var jobs []Job
	line := 0
	for sc.Scan() {
		line++
		text := sc.Text()
		if strings.TrimSpace(text) == "" {
			continue
		}
		f := strings.Split(text, "|")
		if len(f) < squeueTextFields {
			return nil, fmt.Errorf("squeue line %d: %d fields, want %d", line, len(f), squeueTextFields)
		}
		if extra := len(f) - squeueTextFields; extra > 0 {
			name := strings.Join(f[sqName:sqName+extra+1], "|")
			f = append(append(f[:sqName:sqName], name), f[sqName+extra+1:]...)
		}
		// %i|%A|%F|%K|%j|%T|%r|%P|%u|%U|%a|%q|%C|%D|%m|%b|...
		j := Job{
			ID: f[0], State: strings.ToUpper(f[5]), Reason: f[6], Partition: Clean(f[7]),
			User: Clean(f[8]), Account: Clean(f[10]), Count: 1,
		}
		if j.User == "" {
			j.User = f[9]
		}
		cpus, nodesS, mem, gres := f[12], f[13], f[14], f[15]
		var err error
		if j.CPUs, err = strconv.ParseFloat(cpus, 64); err != nil {
			return nil, fmt.Errorf("squeue line %d: cpus %q: %w", line, cpus, err)
		}
		nodes, err := strconv.ParseFloat(nodesS, 64)
		if err != nil || nodes < 1 {
			nodes = 1
		}
		if mem != "" && mem != "N/A" {
			if m, err := ParseMemory(mem); err == nil {
				j.MemoryBytes = m * nodes
			}
		}
		if gres != "N/A" {
			j.GPUs = GresGPUs(gres) * nodes
		}
		jobs = append(jobs, j)
	}
	return jobs, sc.Err()
}
