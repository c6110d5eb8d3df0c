package discovery

import "strings"

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
	// Key tells apart two jobs that reuse one id (after a slurmctld state
	// reset): cluster, job id and start time.
	Key string
	// Source says where the metadata came from: props, environ, scontrol, or none.
	Source string
	// Env holds the GPU- and step-related variables of the job's environment
	// (SLURM_JOB_GPUS, CUDA_VISIBLE_DEVICES, ...) for collectors that map devices.
	Env map[string]string
}

// complete reports whether the fields that label every series are known.
func (m Meta) complete() bool { return m.Account != "" && m.User != "" }

// mergeFrom fills empty fields of m from o.
func (m *Meta) mergeFrom(o Meta) {
	fill := func(dst *string, src string) {
		if *dst == "" {
			*dst = src
		}
	}
	if m.UID < 0 {
		m.UID = o.UID
	}
	fill(&m.User, o.User)
	fill(&m.Account, o.Account)
	fill(&m.Partition, o.Partition)
	fill(&m.QOS, o.QOS)
	fill(&m.Name, o.Name)
	fill(&m.Cluster, o.Cluster)
	fill(&m.ArrayJobID, o.ArrayJobID)
	fill(&m.ArrayTaskID, o.ArrayTaskID)
	fill(&m.Key, o.Key)
	if m.Source == "" || m.Source == "none" {
		m.Source = o.Source
	} else if o.Source != "" && o.Source != "none" && !strings.Contains(m.Source, o.Source) {
		m.Source += "+" + o.Source
	}
	for k, v := range o.Env {
		if m.Env == nil {
			m.Env = map[string]string{}
		}
		if _, ok := m.Env[k]; !ok {
			m.Env[k] = v
		}
	}
}

// envKeys maps Slurm's environment variables (also written by the prolog
// into the job-props directory) to Meta fields.
func metaFromVars(vars map[string]string, source string) Meta {
	m := Meta{UID: -1, Source: source}
	if v, ok := vars["SLURM_JOB_UID"]; ok {
		if uid, err := parseUint(v); err == nil {
			m.UID = int(uid)
		}
	}
	m.User = vars["SLURM_JOB_USER"]
	m.Account = vars["SLURM_JOB_ACCOUNT"]
	m.Partition = vars["SLURM_JOB_PARTITION"]
	m.QOS = vars["SLURM_JOB_QOS"]
	m.Name = vars["SLURM_JOB_NAME"]
	m.Cluster = vars["SLURM_CLUSTER_NAME"]
	m.ArrayJobID = vars["SLURM_ARRAY_JOB_ID"]
	m.ArrayTaskID = vars["SLURM_ARRAY_TASK_ID"]
	for _, k := range deviceVars {
		if v, ok := vars[k]; ok {
			if m.Env == nil {
				m.Env = map[string]string{}
			}
			m.Env[k] = v
		}
	}
	if st := vars["SLURM_JOB_START_TIME"]; st != "" && m.Cluster != "" {
		m.Key = m.Cluster + "/" + vars["SLURM_JOB_ID"] + "/" + st
	}
	return m
}

// deviceVars are kept for device-mapping collectors.
var deviceVars = []string{"SLURM_JOB_GPUS", "SLURM_STEP_GPUS", "CUDA_VISIBLE_DEVICES", "GPU_DEVICE_ORDINAL", "SLURM_JOB_CPUS_PER_NODE", "SLURM_MEM_PER_NODE"}

// parseVars reads KEY=VALUE records separated by sep (NUL for environ,
// newline for props files), keeping only SLURM_* and device variables.
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
		if strings.HasPrefix(k, "SLURM_") || k == "CUDA_VISIBLE_DEVICES" || k == "GPU_DEVICE_ORDINAL" {
			vars[k] = v
		}
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
