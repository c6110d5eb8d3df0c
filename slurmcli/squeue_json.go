// SPDX-License-Identifier: Apache-2.0

package slurmcli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// squeueJob is the part of one `squeue --json` job that the families use.
type squeueJob struct {
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
}

// ParseSqueueJSON reads `squeue --json` output (Slurm 22.05 and later) job
// by job as it comes: only the jobs list's fields the families use are
// kept, never the output itself (see jsonScanner).
func ParseSqueueJSON(r io.Reader) ([]Job, error) {
	return parseSqueueJSONSized(r, 0)
}

// parseSqueueJSONSized is ParseSqueueJSON with room for about hint jobs
// from the start (a sixteenth more, for a growing queue).
func parseSqueueJSONSized(r io.Reader, hint int) ([]Job, error) {
	jobs, err := decodeSqueueStream(r, max(hint+hint/16, 0), nil)
	if err != nil {
		return nil, fmt.Errorf("squeue json: %w", err)
	}
	return jobs, nil
}

// decodeSqueueStream decodes a jobs list; top, when set, gets the
// answer's other fields slurmrestd's conditional fetch needs (see
// restdTop).
func decodeSqueueStream(r io.Reader, hint int, top *restdTop) ([]Job, error) {
	s := newJSONScanner(r)
	d := squeueDecoder{in: interner{}}
	c, err := s.peek()
	if err != nil {
		return nil, err
	}
	if c == 'n' { // null: no list, no errors
		if _, err := s.value(false); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("no \"jobs\" list: %w", ErrJSONShape)
	}
	if c != '{' {
		return nil, fmt.Errorf("json: want an object, got %q", c)
	}
	var (
		jobs    []Job
		hasJobs bool
		sized   bool // the hint's room is taken once
		errs    slurmErrors
	)
	for ok, err := s.first('}'); ok || err != nil; ok, err = s.more('}') {
		if err != nil {
			return nil, err
		}
		k, lower, err := s.key()
		if err != nil {
			return nil, err
		}
		switch fieldName(k, lower) {
		case fieldJobs:
			// The last "jobs" counts, as in a full decode.
			if !sized && hint > 0 {
				jobs, sized = make([]Job, 0, hint), true
			}
			if jobs, hasJobs, err = d.jobs(s, jobs[:0]); err != nil {
				return nil, err
			}
		case fieldErrors:
			raw, err := s.value(true)
			if err != nil {
				return nil, err
			}
			errs = nil
			if err := json.Unmarshal(raw, &errs); err != nil {
				return nil, err
			}
			if top != nil {
				top.Errors = errs
			}
		default:
			// Slurm's own fields (meta, warnings, ...: small, and no
			// job's user writes them) are checked whole, escapes
			// included: an output without a jobs list must fail as a
			// full decode does, a syntax error and not a missing list,
			// which the auto format takes for a squeue without JSON.
			raw, err := s.value(true)
			if err != nil {
				return nil, err
			}
			if !json.Valid(raw) {
				return nil, fmt.Errorf("json: invalid value of %q", truncate(k))
			}
			if top != nil {
				if err := top.field(k, raw); err != nil {
					return nil, err
				}
			}
		}
	}
	if hasJobs {
		return jobs, nil
	}
	if err := errs.err(); err != nil {
		return nil, err
	}
	return nil, fmt.Errorf("no \"jobs\" list: %w", ErrJSONShape)
}

// squeueDecoder decodes the jobs of one output.
type squeueDecoder struct {
	in    interner
	x     squeueJob
	order keyOrder
}

// jobs reads the "jobs" value into jobs: ok is false for null.
func (d *squeueDecoder) jobs(s *jsonScanner, jobs []Job) (_ []Job, ok bool, err error) {
	c, err := s.peek()
	if err != nil {
		return nil, false, err
	}
	if c == 'n' {
		_, err := s.value(false)
		return jobs, false, err
	}
	if c != '[' {
		return nil, false, fmt.Errorf("json: \"jobs\" is not a list (%q)", c)
	}
	for ok, err := s.first(']'); ok || err != nil; ok, err = s.more(']') {
		if err != nil {
			return nil, false, err
		}
		if err := d.job(s); err != nil {
			return nil, false, fmt.Errorf("job %d: %w", len(jobs), err)
		}
		if len(jobs) == cap(jobs) {
			// Double, not append's quarter: fewer copies of a large queue.
			jobs = slices.Grow(jobs, max(len(jobs), 256))
		}
		jobs = append(jobs, d.x.job(&d.in))
	}
	return jobs, true, nil
}

// job reads one element of the list into d.x.
func (d *squeueDecoder) job(s *jsonScanner) error {
	d.x = squeueJob{}
	c, err := s.peek()
	if err != nil {
		return err
	}
	if c == 'n' { // null: a job of zero values, as a full decode gives
		_, err := s.value(false)
		return err
	}
	if c != '{' {
		return fmt.Errorf("json: a job is not an object (%q)", c)
	}
	x := &d.x
	p := 0 // the place in d.order after the job's last key
	for ok, err := s.first('}'); ok || err != nil; ok, err = s.more('}') {
		if err != nil {
			return err
		}
		name, err := d.order.field(s, &p)
		if err != nil {
			return err
		}
		var num *flexNum
		var str *string
		switch name {
		case fieldJobID:
			num = &x.JobID
		case fieldUserID:
			num = &x.UserID
		case fieldCPUs:
			num = &x.CPUs
		case fieldNodeCount:
			num = &x.NodeCount
		case fieldMemPerNode:
			num = &x.MemPerNode
		case fieldMemPerCPU:
			num = &x.MemPerCPU
		case fieldArrayJobID:
			num = &x.ArrayJobID
		case fieldArrayTaskID:
			num = &x.ArrayTaskID
		case fieldSubmit:
			num = &x.Submit
		case fieldStart:
			num = &x.Start
		case fieldStateReason:
			str = &x.Reason
		case fieldPartition:
			str = &x.Partition
		case fieldUserName:
			str = &x.UserName
		case fieldAccount:
			str = &x.Account
		case fieldQOS:
			str = &x.QOS
		case fieldNodes:
			str = &x.Nodes
		case fieldTresAlloc:
			str = &x.TresAlloc
		case fieldTresReq:
			str = &x.TresReq
		case fieldTresPerNode:
			str = &x.TresPerNode
		case fieldArrayTaskString:
			str = &x.ArrayTaskString
		case fieldJobState:
		default: // another key, or "jobs" and "errors" inside a job
			if _, err := s.value(false); err != nil {
				return err
			}
			continue
		}
		raw, err := s.value(true)
		if err != nil {
			return err
		}
		switch {
		case num != nil:
			err = num.decode(raw)
		case str != nil:
			err = d.in.decode(raw, str)
		default:
			err = x.State.decode(raw, &d.in)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	return nil
}

// job turns the decoded fields into a Job; in shares the repeated values.
func (x *squeueJob) job(in *interner) Job {
	j := Job{
		ID:        strconv.FormatFloat(x.JobID.V, 'f', -1, 64),
		Reason:    in.get(PendingReason(x.Reason)),
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
		j.State = in.get(strings.ToUpper(x.State[0]))
	}
	if j.User == "" && x.UserID.Set {
		j.User = in.get(strconv.FormatFloat(x.UserID.V, 'f', -1, 64))
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
	return j
}

// interner keeps one copy of each repeated value of one output (partition,
// state, user, account, QOS, reason): thousands of jobs share a few dozen.
// It lives for one parse and stops growing at maxInterned values, so
// distinct values (one per job at worst) cost what they would without it.
type interner map[string]string

const maxInterned = 4096

// get returns the shared copy of s.
func (in interner) get(s string) string {
	if v, ok := in[s]; ok {
		return v
	}
	if len(in) < maxInterned {
		in[s] = s
	}
	return s
}

// decode reads a JSON string into *dst, shared if already seen: a plain
// string (no escapes, valid UTF-8) is looked up without a copy; any other
// form is left to encoding/json, which a full decode would use (null keeps
// *dst, as there).
func (in interner) decode(raw []byte, dst *string) error {
	if len(raw) >= 2 && raw[0] == '"' && plainString(raw[1:len(raw)-1]) {
		b := raw[1 : len(raw)-1]
		if v, ok := in[string(b)]; ok {
			*dst = v
			return nil
		}
		*dst = string(b)
		if len(in) < maxInterned && len(b) <= 256 {
			in[*dst] = *dst
		}
		return nil
	}
	return json.Unmarshal(raw, dst)
}

// plainString: no escape to decode, no control character (which JSON
// forbids in a string), nothing encoding/json would replace.
func plainString(b []byte) bool {
	ascii := true
	for _, c := range b {
		switch {
		case c == '\\' || c < 0x20:
			return false
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	return ascii || utf8.Valid(b)
}

// decode reads a number, null, or the {set, infinite, number} object of
// Slurm 23.02 and later; forms other than the usual ones go through
// UnmarshalJSON, the full decode's reader.
func (f *flexNum) decode(raw []byte) error {
	if v, ok := smallInt(raw); ok {
		*f = flexNum{V: v, Set: true}
		return nil
	}
	if len(raw) > 0 && raw[0] == '{' {
		if v, ok := setNumber(raw); ok {
			*f = v
			return nil
		}
	}
	return f.UnmarshalJSON(raw)
}

// smallInt reads a JSON integer of at most 15 digits, most of Slurm's
// numbers (ids, times, counts), without strconv: it is exact in a float64,
// so the value is what ParseFloat gives. ok is false for anything else.
func smallInt(raw []byte) (float64, bool) {
	b := raw
	if len(b) > 0 && b[0] == '-' {
		b = b[1:]
	}
	if len(b) == 0 || len(b) > 15 || b[0] == '0' && len(b) > 1 {
		return 0, false
	}
	var n int64
	for _, c := range b {
		if c-'0' > 9 {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	if len(b) < len(raw) {
		if n == 0 { // -0, which ParseFloat keeps
			return 0, false
		}
		n = -n
	}
	return float64(n), true
}

// setNumber reads {"set":B,"infinite":B,"number":N} with its keys in any
// order, each at most once; ok is false for anything else.
func setNumber(raw []byte) (flexNum, bool) {
	var set, inf bool
	var num float64
	var seen [3]bool
	b := raw[1:]
	for len(b) > 0 && b[0] != '}' {
		end := bytes.IndexByte(b, ':')
		if end < 0 {
			return flexNum{}, false
		}
		k := b[:end]
		b = b[end+1:]
		n := bytes.IndexAny(b, ",}")
		if n < 0 {
			return flexNum{}, false
		}
		v := b[:n]
		var i int
		switch string(k) {
		case `"set"`, `"infinite"`:
			if string(v) != "true" && string(v) != "false" {
				return flexNum{}, false
			}
			if k[1] == 's' {
				set, i = string(v) == "true", 0
			} else {
				inf, i = string(v) == "true", 1
			}
		case `"number"`:
			x, err := strconv.ParseFloat(string(v), 64)
			if err != nil || !isJSONNumber(v) {
				return flexNum{}, false
			}
			num, i = x, 2
		default:
			return flexNum{}, false
		}
		if seen[i] {
			return flexNum{}, false
		}
		seen[i] = true
		b = b[n:]
		if b[0] == ',' {
			if b = b[1:]; len(b) == 0 || b[0] == '}' {
				return flexNum{}, false
			}
		}
	}
	if len(b) != 1 {
		return flexNum{}, false
	}
	return flexNum{V: num, Set: set && !inf}, true
}

// decode reads a job_state: a string or a list of strings, the plain ones
// shared; other forms go through UnmarshalJSON.
func (f *flexStrings) decode(raw []byte, in *interner) error {
	if len(raw) > 2 && raw[0] == '[' && raw[1] == '"' && raw[len(raw)-1] == ']' {
		l := (*f)[:0]
		b := raw[1 : len(raw)-1]
		for len(b) > 0 {
			end := bytes.IndexByte(b[1:], '"') + 1
			if b[0] != '"' || end == 0 || !plainString(b[1:end]) {
				return f.UnmarshalJSON(raw)
			}
			var s string
			if err := in.decode(b[:end+1], &s); err != nil {
				return err
			}
			l = append(l, s)
			b = b[end+1:]
			if len(b) > 0 {
				if b[0] != ',' || len(b) == 1 {
					return f.UnmarshalJSON(raw)
				}
				b = b[1:]
			}
		}
		*f = l
		return nil
	}
	if len(raw) >= 2 && raw[0] == '"' && plainString(raw[1:len(raw)-1]) {
		var s string
		if err := in.decode(raw, &s); err != nil {
			return err
		}
		*f = append((*f)[:0], s)
		return nil
	}
	return f.UnmarshalJSON(raw)
}
