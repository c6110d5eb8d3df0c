// SPDX-License-Identifier: Apache-2.0

package slurmcli

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Job is one squeue record. A pending job array that Slurm has not split
// yet is one record standing for Count jobs; the resources are per job.
type Job struct {
	ID        string
	State     string // upper case base state: PENDING, RUNNING, ...
	Reason    string // Slurm's reason code (see PendingReason)
	Partition string
	User      string
	Account   string
	QOS       string
	Count     int

	// RawID is the job's own id; ArrayJobID and ArrayTask are set for the
	// tasks of an array (ArrayTask is a range such as "2-3" on a record
	// standing for several unsplit tasks).
	RawID      string
	ArrayJobID string
	ArrayTask  string

	// Submit and Start are zero when Slurm gives none (a pending job's
	// Start is only the scheduler's forecast).
	Submit, Start time.Time
	// Allocated: the job has or had resources (not a job cancelled while
	// pending, which Slurm gives a start time all the same).
	Allocated bool

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

// squeueTextFields are the -O fields of the text form, one line per array
// task (-r), each field unpadded (":0") and followed by the run's separator
// (NewSeparator). -O rather than -o because only -O has tres-alloc: the
// allocated TRES of a running job and the requested TRES, Slurm's defaults
// applied, of a pending one (-o's %m prints 0 for a job without --mem). The
// name, the one field users type freely, comes last (see splitRecords).
var squeueTextFields = [...]string{"JobArrayID", "JobID", "ArrayJobID", "ArrayTaskID", "State", "Reason",
	"Partition", "UserName", "UserID", "Account", "QOS", "NumCPUs", "NumNodes", "tres-per-node", "tres-alloc",
	"SubmitTime", "StartTime", "Name"}

// Positions in squeueTextFields.
const (
	sqID, sqRawID, sqArrayJob, sqArrayTask, sqState, sqReason = 0, 1, 2, 3, 4, 5
	sqPartition, sqUser, sqUID, sqAccount, sqQOS, sqCPUs      = 6, 7, 8, 9, 10, 11
	sqNodes, sqTresPerNode, sqTres, sqSubmit, sqStart         = 12, 13, 14, 15, 16
)

// SqueueTextArgs are the arguments for the text form with separator sep.
func SqueueTextArgs(sep string) []string {
	return []string{"-h", "-a", "-r", "-O", squeueTextFormat(sep)}
}

func squeueTextFormat(sep string) string {
	f := make([]string, len(squeueTextFields))
	for i, name := range squeueTextFields {
		f[i] = name + ":0" + sep
	}
	f[len(f)-1] = squeueTextFields[len(f)-1] + ":0"
	return strings.Join(f, ",")
}

// applyTRES takes memory, GPUs (and CPUs where squeue gave none) from a
// TRES string; false when there is none to read.
func (j *Job) applyTRES(s string) bool {
	tres, err := ParseTRES(s)
	if err != nil || s == "" {
		return false
	}
	j.MemoryBytes, j.GPUs = tres.MemoryBytes, tres.GPUs
	if j.CPUs == 0 {
		j.CPUs = tres.CPUs
	}
	return true
}

// epoch reads a JSON time; 0 and unset are "none".
func epoch(f flexNum) time.Time {
	if !f.Set || f.V <= 0 || f.V >= 1<<40 {
		return time.Time{}
	}
	return time.Unix(int64(f.V), 0)
}

// ParseSqueueText reads the output of squeue with SqueueTextArgs(sep), its
// times in the local zone.
func ParseSqueueText(r io.Reader, sep string) ([]Job, Refused, error) {
	return ParseSqueueTextIn(r, time.Local, sep)
}

// ParseSqueueTextIn is ParseSqueueText with the zone squeue printed in.
// Records that cannot be read, and every record of a job printed twice,
// are left out and counted in Refused.
func ParseSqueueTextIn(r io.Reader, loc *time.Location, sep string) ([]Job, Refused, error) {
	var jobs []Job
	ref, err := splitRecords(r, sep, len(squeueTextFields), func(_ int, f []string) error {
		j := Job{
			ID: f[sqID], RawID: f[sqRawID], State: strings.ToUpper(f[sqState]), Reason: PendingReason(f[sqReason]),
			Partition: Clean(f[sqPartition]), User: Clean(f[sqUser]), Account: Clean(f[sqAccount]),
			QOS: Clean(f[sqQOS]), Count: 1,
		}
		if j.User == "" {
			j.User = f[sqUID]
		}
		if f[sqArrayTask] != "N/A" && f[sqArrayTask] != "" {
			j.ArrayJobID, j.ArrayTask = f[sqArrayJob], f[sqArrayTask]
		}
		// squeue lists no ended jobs without -t: every job past pending
		// has resources.
		j.Allocated = j.State != "PENDING"
		var err error
		if j.CPUs, err = strconv.ParseFloat(f[sqCPUs], 64); err != nil {
			return fmt.Errorf("cpus %q: %w", f[sqCPUs], err)
		}
		if j.Submit, err = squeueTime(f[sqSubmit], loc); err != nil {
			return fmt.Errorf("submit time: %w", err)
		}
		if j.Start, err = squeueTime(f[sqStart], loc); err != nil {
			return fmt.Errorf("start time: %w", err)
		}
		if !j.applyTRES(f[sqTres]) {
			nodes, err := strconv.ParseFloat(f[sqNodes], 64)
			if err != nil || nodes < 1 {
				nodes = 1
			}
			if g := f[sqTresPerNode]; g != "N/A" {
				j.GPUs = GresGPUs(g) * nodes
			}
		}
		if len(jobs) == cap(jobs) {
			// Double: append grows a large slice by a quarter, copying a
			// 50,000-job queue five times over.
			jobs = slices.Grow(jobs, max(len(jobs), 64))
		}
		jobs = append(jobs, j)
		return nil
	})
	if err != nil {
		return nil, ref, err
	}
	// JobArrayID names one record: a job, an array task, or a pending
	// array's unsplit tasks ("7_[2-3]").
	jobs = dropDuplicates(jobs, func(j Job) string { return j.ID }, &ref)
	return jobs, ref, nil
}

// squeueTime reads a time squeue printed; N/A, Unknown and None are none.
func squeueTime(s string, loc *time.Location) (time.Time, error) {
	switch s {
	case "", "N/A", "Unknown", "None":
		return time.Time{}, nil
	}
	if t, ok := parseStamp(s, loc); ok {
		return t, nil
	}
	return time.ParseInLocation(sacctTime, s, loc)
}

// parseStamp reads "2006-01-02T15:04:05" without time.Parse's generality:
// a queue has two of them per job. ok is false for anything else (the
// caller then lets time.Parse say what is wrong).
func parseStamp(s string, loc *time.Location) (time.Time, bool) {
	if len(s) != 19 || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' || s[16] != ':' {
		return time.Time{}, false
	}
	num := func(i, n int) (int, bool) {
		v := 0
		for _, c := range []byte(s[i : i+n]) {
			if c < '0' || c > '9' {
				return 0, false
			}
			v = v*10 + int(c-'0')
		}
		return v, true
	}
	var v [6]int
	for k, p := range [6][2]int{{0, 4}, {5, 2}, {8, 2}, {11, 2}, {14, 2}, {17, 2}} {
		x, ok := num(p[0], p[1])
		if !ok {
			return time.Time{}, false
		}
		v[k] = x
	}
	if v[1] < 1 || v[1] > 12 || v[2] < 1 || v[2] > 31 || v[3] > 23 || v[4] > 59 || v[5] > 60 {
		return time.Time{}, false
	}
	return time.Date(v[0], time.Month(v[1]), v[2], v[3], v[4], v[5], 0, loc), true
}
