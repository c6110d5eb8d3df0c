// SPDX-License-Identifier: Apache-2.0

package discovery

import (
	"slices"
	"strconv"
	"strings"

	"github.com/jobscope/jobscope/slurmcli"
)

// Meta is what Slurm knows about a job and cgroupfs does not.
type Meta struct {
	UID         int // -1 when unknown
	User        string
	Account     string
	Partition   string
	QOS         string
	Name        string
	Cluster     string
	ArrayJobID  string
	ArrayTaskID string
	SLUID       string
	StartTime   int64 // unix seconds, 0 when unknown
	// Key tells apart two jobs that reuse one id (after a slurmctld state
	// reset): the SLUID where Slurm has one, else cluster, job id and start
	// time; "" until a source gives the start time. Every source gives the
	// same key for one job.
	Key string
	// Source says where the metadata came from: the sources that gave at
	// least one field (props, environ, squeue, in this order), joined by
	// "+", or none. environ marks values that only a job process's
	// environment gave (and a SLUID directory's job id taken from it):
	// hints, replaced when squeue answers.
	Source string
	// Env holds the GPU- and step-related variables of the job's environment
	// (SLURM_JOB_GPUS, CUDA_VISIBLE_DEVICES, ...) for collectors that map devices.
	Env map[string]string
}

// Source names.
const (
	SourceProps   = "props"
	SourceEnviron = "environ"
	SourceSqueue  = "squeue"
	SourceNone    = "none"
)

// mergeFrom fills the empty fields of m from o, field by field, and says
// whether o gave any label field.
func (m *Meta) mergeFrom(o Meta) bool {
	gave := false
	fill := func(dst *string, src string) {
		if *dst == "" && src != "" {
			*dst = src
			gave = true
		}
	}
	if m.UID < 0 && o.UID >= 0 {
		m.UID = o.UID
		gave = true
	}
	fill(&m.User, o.User)
	fill(&m.Account, o.Account)
	fill(&m.Partition, o.Partition)
	fill(&m.QOS, o.QOS)
	fill(&m.Name, o.Name)
	fill(&m.Cluster, o.Cluster)
	fill(&m.ArrayJobID, o.ArrayJobID)
	fill(&m.ArrayTaskID, o.ArrayTaskID)
	fill(&m.SLUID, o.SLUID)
	if m.StartTime == 0 && o.StartTime > 0 {
		m.StartTime = o.StartTime
		gave = true
	}
	// Device variables feed device mapping, not labels: they do not
	// make a source count.
	for k, v := range o.Env {
		if m.Env == nil {
			m.Env = map[string]string{}
		}
		if _, ok := m.Env[k]; !ok {
			m.Env[k] = v
		}
	}
	return gave
}

// key builds Meta.Key for job id.
func (m Meta) key(id string) string {
	switch {
	case m.SLUID != "":
		return m.SLUID
	case m.StartTime > 0:
		return m.Cluster + "/" + id + "/" + strconv.FormatInt(m.StartTime, 10)
	}
	return ""
}

// metaFromVars maps Slurm's environment variables (also written by the
// prolog into the job-props directory) to Meta fields.
func metaFromVars(vars map[string]string) Meta {
	m := Meta{UID: -1}
	if v, ok := vars["SLURM_JOB_UID"]; ok {
		if uid, err := parseUint(v); err == nil {
			m.UID = int(uid)
		}
	}
	get := func(k string) string { return slurmcli.Clean(vars[k]) }
	m.User = get("SLURM_JOB_USER")
	m.Account = get("SLURM_JOB_ACCOUNT")
	m.Partition = get("SLURM_JOB_PARTITION")
	m.QOS = get("SLURM_JOB_QOS")
	m.Name = get("SLURM_JOB_NAME")
	m.Cluster = get("SLURM_CLUSTER_NAME")
	m.ArrayJobID = get("SLURM_ARRAY_JOB_ID")
	m.ArrayTaskID = get("SLURM_ARRAY_TASK_ID")
	if s := vars["SLURM_JOB_SLUID"]; slurmcli.IsSLUID(s) {
		m.SLUID = s
	}
	if st, err := parseUint(vars["SLURM_JOB_START_TIME"]); err == nil && st > 0 {
		m.StartTime = int64(st)
	}
	for _, k := range deviceVars {
		if v, ok := vars[k]; ok {
			if m.Env == nil {
				m.Env = map[string]string{}
			}
			m.Env[k] = v
		}
	}
	return m
}

// metaFromNodeJob maps a squeue record.
func metaFromNodeJob(j slurmcli.NodeJob) Meta {
	return Meta{UID: j.UID, User: j.User, Account: j.Account, Partition: j.Partition, QOS: j.QOS, Name: j.Name,
		Cluster: j.Cluster, ArrayJobID: j.ArrayJobID, ArrayTaskID: j.ArrayTaskID, SLUID: j.SLUID, StartTime: j.StartTime}
}

// deviceVars are kept for device-mapping collectors.
var deviceVars = []string{"SLURM_JOB_GPUS", "SLURM_STEP_GPUS", "CUDA_VISIBLE_DEVICES", "GPU_DEVICE_ORDINAL", "SLURM_JOB_CPUS_PER_NODE", "SLURM_MEM_PER_NODE"}

// maxDeviceValue bounds a device variable: a list of GPU UUIDs is longer
// than a name, and it feeds device mapping, not labels.
const maxDeviceValue = 4 << 10

// parseVars reads KEY=VALUE records separated by sep (NUL for environ,
// newline for props files), keeping only SLURM_* and device variables
// whose values are within their bounds.
func parseVars(b []byte, sep byte) map[string]string {
	vars := map[string]string{}
	for len(b) > 0 {
		var rec []byte
		if i := indexByte(b, sep); i >= 0 {
			rec, b = b[:i], b[i+1:]
		} else {
			rec, b = b, nil
		}
		s := strings.TrimSpace(string(rec))
		k, v, ok := strings.Cut(s, "=")
		if !ok {
			continue
		}
		device := slices.Contains(deviceVars, k)
		if !device && !strings.HasPrefix(k, "SLURM_") {
			continue
		}
		// A value over its bound is dropped whole, not cut: a cut value
		// could pass for another user's or account's name.
		if len(v) > maxValue && (!device || len(v) > maxDeviceValue) {
			continue
		}
		vars[k] = v
	}
	return vars
}

func indexByte(b []byte, c byte) int {
	for i := range b {
		if b[i] == c {
			return i
		}
	}
	return -1
}
