// SPDX-License-Identifier: Apache-2.0

package slurmcli

import (
	"encoding/json"
	"slices"
	"strings"
)

// squeueField is a key of squeue --json that jobscope reads: the top
// level's jobs and errors, and the job fields of squeueJob; fieldOther is
// any other key. A small integer: a key is matched once, by one switch on
// its bytes, and its users switch on the number.
type squeueField uint8

const (
	fieldOther squeueField = iota
	fieldJobs
	fieldErrors
	fieldJobID
	fieldJobState
	fieldStateReason
	fieldPartition
	fieldUserName
	fieldUserID
	fieldAccount
	fieldQOS
	fieldCPUs
	fieldNodeCount
	fieldNodes
	fieldTresAlloc
	fieldTresReq
	fieldTresPerNode
	fieldMemPerNode
	fieldMemPerCPU
	fieldArrayJobID
	fieldArrayTaskID
	fieldArrayTaskString
	fieldSubmit
	fieldStart
	numSqueueFields
)

// String is the key as Slurm prints it.
func (f squeueField) String() string {
	switch f {
	case fieldJobs:
		return "jobs"
	case fieldErrors:
		return "errors"
	case fieldJobID:
		return "job_id"
	case fieldJobState:
		return "job_state"
	case fieldStateReason:
		return "state_reason"
	case fieldPartition:
		return "partition"
	case fieldUserName:
		return "user_name"
	case fieldUserID:
		return "user_id"
	case fieldAccount:
		return "account"
	case fieldQOS:
		return "qos"
	case fieldCPUs:
		return "cpus"
	case fieldNodeCount:
		return "node_count"
	case fieldNodes:
		return "nodes"
	case fieldTresAlloc:
		return "tres_alloc_str"
	case fieldTresReq:
		return "tres_req_str"
	case fieldTresPerNode:
		return "tres_per_node"
	case fieldMemPerNode:
		return "memory_per_node"
	case fieldMemPerCPU:
		return "memory_per_cpu"
	case fieldArrayJobID:
		return "array_job_id"
	case fieldArrayTaskID:
		return "array_task_id"
	case fieldArrayTaskString:
		return "array_task_string"
	case fieldSubmit:
		return "submit_time"
	case fieldStart:
		return "start_time"
	}
	return ""
}

// fieldName is the field an object key names, as encoding/json matches a
// key to a field: exactly, or else without case. lower (from key) says
// the raw key is its own folded form, as all of Slurm's are: then the one
// exact switch answers, with no copy.
func fieldName(k []byte, lower bool) squeueField {
	if lower {
		return known(k)
	}
	var low [64]byte
	for i, c := range k {
		switch {
		case c == '\\' || c >= 0x80:
			return foldedFieldName(k)
		case i == len(low):
			return fieldOther // longer than any name
		case 'A' <= c && c <= 'Z':
			c += 'a' - 'A'
		}
		low[i] = c
	}
	return known(low[:len(k)])
}

// known is the field whose key is exactly k: a switch on string(k)
// compares in place, without allocating (a string made of k would escape,
// once per key).
func known(k []byte) squeueField {
	switch string(k) {
	case "jobs":
		return fieldJobs
	case "errors":
		return fieldErrors
	case "job_id":
		return fieldJobID
	case "job_state":
		return fieldJobState
	case "state_reason":
		return fieldStateReason
	case "partition":
		return fieldPartition
	case "user_name":
		return fieldUserName
	case "user_id":
		return fieldUserID
	case "account":
		return fieldAccount
	case "qos":
		return fieldQOS
	case "cpus":
		return fieldCPUs
	case "node_count":
		return fieldNodeCount
	case "nodes":
		return fieldNodes
	case "tres_alloc_str":
		return fieldTresAlloc
	case "tres_req_str":
		return fieldTresReq
	case "tres_per_node":
		return fieldTresPerNode
	case "memory_per_node":
		return fieldMemPerNode
	case "memory_per_cpu":
		return fieldMemPerCPU
	case "array_job_id":
		return fieldArrayJobID
	case "array_task_id":
		return fieldArrayTaskID
	case "array_task_string":
		return fieldArrayTaskString
	case "submit_time":
		return fieldSubmit
	case "start_time":
		return fieldStart
	}
	return fieldOther
}

// maxFoldedKey bounds the escaped and non-ASCII keys decoded: a key that
// folds to a name of n ASCII letters is at most 6n bytes (each letter
// written \uXXXX; the runes that fold to ASCII, ſ and K, are in the BMP),
// and the longest name has 17.
const maxFoldedKey = 6 * len("array_task_string")

// foldedFieldName matches escaped and non-ASCII keys with Unicode case
// folding, as encoding/json does ("job_ſtate" is job_state).
func foldedFieldName(k []byte) squeueField {
	if len(k) > maxFoldedKey {
		return fieldOther
	}
	var name string
	if json.Unmarshal(append(append([]byte{'"'}, k...), '"'), &name) != nil {
		return fieldOther
	}
	for f := fieldJobs; f < numSqueueFields; f++ {
		if strings.EqualFold(name, f.String()) {
			return f
		}
	}
	return fieldOther
}

// keyOrder remembers the keys of the jobs so far, in their order: Slurm
// prints every job's keys alike, so the next key is most often the one
// that followed the last key in the jobs before, and one comparison of the
// window with it reads the key and names its field, without looking for
// its end or matching it again (keys were a third of a poll's CPU). Some
// jobs lack keys that others have (22.05 prints job_resources only for a
// job that has resources): a key not at the place expected is looked for
// a few places on, and a new key is inserted, so the order becomes that
// of all the keys seen. It is bounded: maxOrderKeys keys of at most
// maxOrderKey bytes, each buffer reused once it is full.
type keyOrder []orderKey

type orderKey struct {
	key   []byte // raw, its own folded form (key's lower)
	field squeueField
}

const (
	maxOrderKeys = 512
	maxOrderKey  = 64
	// orderSkip is how many places on a key is looked for: a job may lack
	// that many keys in a row and still be read by comparison alone.
	orderSkip = 8
)

// field reads the key of a job's member and names its field; *p is the
// place in o after the job's last key, moved past this one.
func (o *keyOrder) field(s *jsonScanner, p *int) (squeueField, error) {
	t := *o
	for q := *p; q < len(t) && q <= *p+orderSkip; q++ {
		if s.keyIs(t[q].key) {
			*p = q + 1
			return t[q].field, nil
		}
	}
	k, lower, err := s.key()
	if err != nil {
		return fieldOther, err
	}
	f := fieldName(k, lower)
	// Only a key of plain bytes is remembered: the window's bytes equal to
	// it are then that key, no escape or fold to tell.
	if !lower || len(k) > maxOrderKey {
		return f, nil
	}
	i := min(*p, len(t))
	switch {
	case len(t) < maxOrderKeys:
		t = slices.Insert(t, i, orderKey{})
		*o = t
	case i == len(t): // full: only replaced from here on
		return f, nil
	}
	t[i] = orderKey{key: append(t[i].key[:0], k...), field: f}
	*p = i + 1
	return f, nil
}
