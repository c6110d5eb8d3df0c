// SPDX-License-Identifier: Apache-2.0

package slurmcli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/jobscope/jobscope/internal/cmdrun"
)

// NodeJob is what slurmctld knows about one job running on a node: the
// metadata node mode labels the job's series with. Empty fields are
// unknown (or "(null)" in Slurm's output).
type NodeJob struct {
	ID          string // raw numeric job id (an array task's own id)
	SLUID       string // Slurm 26.05's unique job id; "" before 26.05
	User        string
	UID         int // -1 when unknown
	Account     string
	Partition   string
	QOS         string
	Name        string
	Cluster     string
	ArrayJobID  string
	ArrayTaskID string
	StartTime   int64 // unix seconds; 0 when unknown
}

// Clean turns Slurm's "(null)" (an unset string field) into "": an absent
// value is an empty label, whatever command or file printed it.
func Clean(s string) string {
	if s == "(null)" {
		return ""
	}
	return s
}

// nodeJobsFields are the -o fields of NodeJobsArgs' text form: the raw job
// id (%A) first, the job name, which the job's user chooses, last (see
// splitRecords).
var nodeJobsFields = [...]string{"%A", "%F", "%K", "%u", "%U", "%a", "%q", "%P", "%S", "%j"}

// nodeJobsFormat joins the fields with sep, which squeue -o prints as it is
// after each field but the last.
func nodeJobsFormat(sep string) string { return strings.Join(nodeJobsFields[:], sep) }

// NodeJobsArgs are squeue's arguments for the jobs on nodes (Slurm node
// names, checked with ValidNodeName): JSON when asJSON, else the -o text
// with its fields joined by sep (NewSeparator).
// squeue --json of Slurm 22.05 ignores --nodelist and lists every job, so
// callers look up the jobs they want rather than trust the filter.
func NodeJobsArgs(nodes []string, asJSON bool, sep string) []string {
	args := []string{"--nodelist=" + strings.Join(nodes, ",")}
	if asJSON {
		return append(args, "--json")
	}
	return append(args, "--noheader", "--array", "-o", nodeJobsFormat(sep))
}

// ValidNodeName reports whether s can be passed to squeue as a node name:
// the characters of host names, nothing an option parser could take for
// something else.
func ValidNodeName(s string) bool {
	if s == "" || len(s) > 255 || s[0] == '-' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

type nodeJobsJSON struct {
	Errors slurmErrors `json:"errors"`
	Jobs   []struct {
		JobID       flexNum `json:"job_id"`
		ArrayJobID  flexNum `json:"array_job_id"`
		ArrayTaskID flexNum `json:"array_task_id"`
		Name        string  `json:"name"`
		UserName    string  `json:"user_name"`
		UserID      flexNum `json:"user_id"`
		Account     string  `json:"account"`
		QOS         string  `json:"qos"`
		Partition   string  `json:"partition"`
		Cluster     string  `json:"cluster"`
		StartTime   flexNum `json:"start_time"`
		SLUID       string  `json:"sluid"`
		StepID      struct {
			SLUID string `json:"sluid"`
		} `json:"step_id"`
	} `json:"jobs"`
}

// ParseNodeJobsJSON reads `squeue --json` output (every version: 22.05's
// plain numbers and 23.02's {set, number} objects). Slurm 26.05 gives a
// job's SLUID as step_id.sluid.
func ParseNodeJobsJSON(r io.Reader) ([]NodeJob, error) {
	var in nodeJobsJSON
	if err := decodeList(r, "squeue json", "jobs", &in, func() bool { return in.Jobs != nil }, func() slurmErrors { return in.Errors }); err != nil {
		return nil, err
	}
	out := make([]NodeJob, 0, len(in.Jobs))
	for _, x := range in.Jobs {
		if !x.JobID.Set || x.JobID.V <= 0 {
			continue
		}
		j := NodeJob{
			ID:   formatID(x.JobID.V),
			Name: Clean(x.Name), User: Clean(x.UserName), UID: -1,
			Account: Clean(x.Account), QOS: Clean(x.QOS), Partition: Clean(x.Partition), Cluster: Clean(x.Cluster),
			SLUID: x.StepID.SLUID,
		}
		if j.SLUID == "" {
			j.SLUID = x.SLUID
		}
		if !IsSLUID(j.SLUID) {
			j.SLUID = ""
		}
		if x.UserID.Set && x.UserID.V >= 0 {
			j.UID = int(x.UserID.V)
		}
		// A job that is no array has array_job_id 0 and no task id.
		if x.ArrayJobID.Set && x.ArrayJobID.V > 0 && x.ArrayTaskID.Set && x.ArrayTaskID.V >= 0 {
			j.ArrayJobID, j.ArrayTaskID = formatID(x.ArrayJobID.V), formatID(x.ArrayTaskID.V)
		}
		if x.StartTime.Set && x.StartTime.V > 0 {
			j.StartTime = int64(x.StartTime.V)
		}
		out = append(out, j)
	}
	return out, nil
}

// ParseNodeJobsText reads squeue's output with NodeJobsArgs' text form
// and separator sep. Start times are local times
// (SLURM_TIME_FORMAT=standard), read in loc. Records that cannot be read,
// and every record of a job id printed twice, are left out and counted in
// Refused; the error is for output that could not be read at all.
func ParseNodeJobsText(r io.Reader, loc *time.Location, sep string) ([]NodeJob, Refused, error) {
	var out []NodeJob
	ref, err := splitRecords(r, sep, len(nodeJobsFields), func(_ int, f []string) error {
		// %A|%F|%K|%u|%U|%a|%q|%P|%S|%j
		if !isDigits(f[0]) {
			return fmt.Errorf("job id %q", f[0])
		}
		j := NodeJob{ID: f[0], User: Clean(f[3]), UID: -1, Account: Clean(f[5]), QOS: Clean(f[6]),
			Partition: Clean(f[7]), Name: Clean(f[9])}
		if uid, err := strconv.Atoi(f[4]); err == nil && uid >= 0 {
			j.UID = uid
		}
		if isDigits(f[1]) && isDigits(f[2]) {
			j.ArrayJobID, j.ArrayTaskID = f[1], f[2]
		}
		if t, err := time.ParseInLocation("2006-01-02T15:04:05", f[8], loc); err == nil && t.Unix() > 0 {
			j.StartTime = t.Unix()
		}
		out = append(out, j)
		return nil
	})
	if err != nil {
		return nil, ref, err
	}
	out = dropDuplicates(out, func(j NodeJob) string { return j.ID }, &ref)
	return out, ref, nil
}

// QueryNodeJobs runs one squeue for the jobs on nodes and parses it. With
// FormatAuto it asks for JSON only where it needs SLUIDs (text has none),
// and falls back to text when this squeue has no usable --json. A
// *RefusedError (Partial) comes with good jobs: some records were left out.
func QueryNodeJobs(ctx context.Context, r *Runner, nodes []string, format Format, wantSLUID bool) ([]NodeJob, error) {
	for _, n := range nodes {
		if !ValidNodeName(n) {
			return nil, fmt.Errorf("squeue: refusing node name %q", n)
		}
	}
	if len(nodes) == 0 {
		return nil, errors.New("squeue: no node name")
	}
	asJSON := format == FormatJSON || format == FormatAuto && wantSLUID
	jobs, err := queryNodeJobs(ctx, r, nodes, asJSON)
	if asJSON && format == FormatAuto && (jsonRefused(err) || errors.Is(err, ErrJSONShape)) {
		return queryNodeJobs(ctx, r, nodes, false)
	}
	return jobs, err
}

func queryNodeJobs(ctx context.Context, r *Runner, nodes []string, asJSON bool) ([]NodeJob, error) {
	sep := NewSeparator()
	out, err := r.Run(ctx, "squeue", NodeJobsArgs(nodes, asJSON, sep)...)
	if err != nil {
		return nil, err
	}
	var jobs []NodeJob
	var ref Refused
	if asJSON {
		jobs, err = ParseNodeJobsJSON(bytes.NewReader(out))
	} else {
		jobs, ref, err = ParseNodeJobsText(bytes.NewReader(out), time.Local, sep)
	}
	if err != nil {
		r.Stats().ParseError("squeue")
		return nil, fmt.Errorf("%w: %w", ErrParse, err)
	}
	return jobs, r.refused("squeue", ref)
}

// ErrParse marks command output that could not be parsed.
var ErrParse = errors.New("output not understood")

// ErrorCause classifies an error of Runner.Run or a query for error
// counters: timeout, exit, start, too_large, canceled, parse, record (some
// records left out of a good answer) or other.
func ErrorCause(err error) string {
	var ee *ExitError
	switch {
	case err == nil:
		return ""
	case Partial(err):
		return CauseRecord
	case errors.Is(err, ErrTimeout):
		return CauseTimeout
	case errors.As(err, &ee):
		return CauseExit
	case errors.Is(err, ErrParse), errors.Is(err, ErrJSONShape):
		return CauseParse
	case errors.Is(err, context.Canceled):
		return CauseCanceled
	case errors.Is(err, exec.ErrNotFound), errors.Is(err, fs.ErrNotExist), errors.Is(err, fs.ErrPermission):
		return CauseStart
	case errors.Is(err, cmdrun.ErrTooLarge):
		return CauseTooLarge
	}
	return "other"
}

// IsSLUID reports whether s is a Slurm 26.05 SLUID: "s" and 13 characters
// of Crockford's base 32 in upper case (no I, L, O or U).
func IsSLUID(s string) bool {
	if len(s) != 14 || s[0] != 's' {
		return false
	}
	for i := 1; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'A' && c <= 'Z') || c == 'I' || c == 'L' || c == 'O' || c == 'U' {
			return false
		}
	}
	return true
}

func formatID(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

func isDigits(s string) bool {
	if s == "" || len(s) > 20 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
