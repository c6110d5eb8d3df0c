// SPDX-License-Identifier: Apache-2.0

package slurmcli

import (
	"io"
	"strconv"
	"strings"
)

type squeueJSONFull struct {
	Errors slurmErrors `json:"errors"`
	Jobs   []struct {
		JobID           flexNum     `json:"job_id"`
		State           flexStrings `json:"job_state"`
		Reason          string      `json:"state_reason"`
		Partition       string      `json:"partition"`
		UserName        string      `json:"user_name"`
		UserID          flexNum     `json:"user_id"`
		Account         string      `json:"account"`
		QOS             string      `json:"qos"`
		CPUs            flexNum     `json:"cpus"`
		NodeCount       flexNum     `json:"node_count"`
		Nodes           string      `json:"nodes"`
		TresAlloc       string      `json:"tres_alloc_str"`
		TresReq         string      `json:"tres_req_str"`
		TresPerNode     string      `json:"tres_per_node"`
		MemPerNode      flexNum     `json:"memory_per_node"`
		MemPerCPU       flexNum     `json:"memory_per_cpu"`
		ArrayJobID      flexNum     `json:"array_job_id"`
		ArrayTaskID     flexNum     `json:"array_task_id"`
		ArrayTaskString string      `json:"array_task_string"`
		Submit          flexNum     `json:"submit_time"`
		Start           flexNum     `json:"start_time"`
	} `json:"jobs"`
}

// parseSqueueJSONFull is the decoder ParseSqueueJSON replaced, kept as the
// reference: encoding/json decodes the whole output at once.
func parseSqueueJSONFull(r io.Reader) ([]Job, error) {
	var in squeueJSONFull
	if err := decodeList(r, "squeue json", "jobs", &in, func() bool { return in.Jobs != nil }, func() slurmErrors { return in.Errors }); err != nil {
		return nil, err
	}
	jobs := make([]Job, 0, len(in.Jobs))
	for _, x := range in.Jobs {
		j := Job{
			ID:        strconv.FormatFloat(x.JobID.V, 'f', -1, 64),
			Reason:    PendingReason(x.Reason),
			Partition: Clean(x.Partition),
			User:      Clean(x.UserName),
			Account:   Clean(x.Account),
			QOS:       Clean(x.QOS),
			Count:     1,
			CPUs:      x.CPUs.V,
			Submit:    epoch(x.Submit),
			Start:     epoch(x.Start),
			Allocated: x.TresAlloc != "" || x.Nodes != "",
		}
		j.RawID = j.ID
		if len(x.State) > 0 {
			j.State = strings.ToUpper(x.State[0])
		}
		if j.User == "" && x.UserID.Set {
			j.User = strconv.FormatFloat(x.UserID.V, 'f', -1, 64)
		}
		if x.ArrayJobID.Set && x.ArrayJobID.V > 0 {
			j.ArrayJobID = strconv.FormatFloat(x.ArrayJobID.V, 'f', -1, 64)
			switch {
			case x.ArrayTaskString != "":
				j.ArrayTask = x.ArrayTaskString
			case x.ArrayTaskID.Set:
				j.ArrayTask = strconv.FormatFloat(x.ArrayTaskID.V, 'f', -1, 64)
			}
		}
		if j.State == "PENDING" && x.ArrayTaskString != "" {
			j.Count = ArrayTaskCount(x.ArrayTaskString)
		}
		// Allocated TRES for jobs that have resources, requested otherwise.
		tresStr := x.TresAlloc
		if tresStr == "" {
			tresStr = x.TresReq
		}
		if !j.applyTRES(tresStr) {
			nodes := max(x.NodeCount.V, 1)
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
