// SPDX-License-Identifier: Apache-2.0

package notify

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jobscope/jobscope/slurmcli"
)

// Owner is what slurmctld says about a job: the only source of who gets a
// mail and whose job an action touches.
type Owner struct {
	JobID    string
	User     string
	UID      int
	State    string
	Start    int64 // unix seconds; 0 when unknown
	Name     string
	MailUser string // --mail-user, "" when unset or ambiguous
}

// Lookup outcomes that are final (no retry): the job is gone or another.
var (
	errJobNotFound   = errors.New("job not found in Slurm")
	errJobNotRunning = errors.New("job not running")
	errJobMismatch   = errors.New("job_key does not match the job Slurm has under this id (id reused)")
	errNoKey         = errors.New("alert without a job_key Slurm can confirm")
)

// squeueFields are the fields asked of squeue, the job name last: only the
// name is the user's text, and SplitN leaves anything in it to the name.
const squeueFields = 6

// squeueArgs asks for one job with a delimiter chosen at random for this
// run: a job name cannot contain a delimiter it cannot know.
func squeueArgs(jobID, delim string) []string {
	f := strings.Join([]string{"%A", "%u", "%U", "%T", "%S", "%j"}, delim)
	return []string{"--noheader", "--jobs=" + jobID, "--format=" + f}
}

func randomDelim() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on Linux
	return "|" + hex.EncodeToString(b[:]) + "|"
}

// parseSqueue finds job id's line in squeueArgs' output (an array's tasks
// may add others). Start times are local times (SLURM_TIME_FORMAT=standard,
// set by the runner), read in loc.
func parseSqueue(out []byte, jobID, delim string, loc *time.Location) (Owner, error) {
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		f := strings.SplitN(sc.Text(), delim, squeueFields)
		if len(f) != squeueFields || f[0] != jobID {
			continue
		}
		o := Owner{JobID: f[0], User: f[1], UID: -1, State: f[3], Name: f[5]}
		if uid, err := strconv.Atoi(f[2]); err == nil && uid >= 0 {
			o.UID = uid
		}
		if t, err := time.ParseInLocation("2006-01-02T15:04:05", f[4], loc); err == nil && t.Unix() > 0 {
			o.Start = t.Unix()
		}
		if !validUser(o.User) || o.UID < 0 {
			return Owner{}, fmt.Errorf("%w: squeue gave user %q uid %q", slurmcli.ErrParse, textSafe(clip(f[1], 64)), textSafe(clip(f[2], 16)))
		}
		return o, nil
	}
	if err := sc.Err(); err != nil {
		return Owner{}, fmt.Errorf("%w: %w", slurmcli.ErrParse, err)
	}
	return Owner{}, errJobNotFound
}

// parseMailUser reads MailUser from `scontrol show job -o ID`, which prints
// Key=value pairs separated by spaces, values unquoted: a job name, a
// working directory or an output path can hold " MailUser=x MailType=y"
// as well. Those are all the job owner's own text about the owner's own job,
// so at worst they choose the address as --mail-user would; but when the
// line holds two different candidates the choice is ambiguous and none is
// taken (the site's address template applies).
func parseMailUser(out []byte, jobID string) string {
	line := string(out)
	if !strings.HasPrefix(line, "JobId="+jobID+" ") {
		return ""
	}
	var found string
	for rest := line; ; {
		i := strings.Index(rest, " MailUser=")
		if i < 0 {
			break
		}
		rest = rest[i+len(" MailUser="):]
		v, _, ok := strings.Cut(rest, " MailType=")
		if !ok || strings.ContainsAny(v, " \n") {
			continue
		}
		if found != "" && found != v {
			return ""
		}
		found = v
	}
	return found
}

// slurmLookup asks slurmctld about one job: identity from squeue, the
// mail address from scontrol (squeue has no field for it in 22.05, and
// scontrol has no --json there).
func slurmLookup(ctx context.Context, r *slurmcli.Runner, jobID string) (Owner, error) {
	delim := randomDelim()
	out, err := r.Run(ctx, "squeue", squeueArgs(jobID, delim)...)
	if err != nil {
		var ee *slurmcli.ExitError
		if errors.As(err, &ee) && strings.Contains(ee.Stderr, "Invalid job id") {
			return Owner{}, errJobNotFound
		}
		return Owner{}, err
	}
	o, err := parseSqueue(out, jobID, delim, time.Local)
	if err != nil {
		return Owner{}, err
	}
	if out, err := r.Run(ctx, "scontrol", "show", "job", "-o", jobID); err == nil {
		o.MailUser = parseMailUser(out, jobID)
	}
	// Without scontrol's answer the template applies: the mail still
	// reaches the owner, so this is no reason to retry.
	return o, nil
}

// verify checks that the job Slurm has under the alert's id is the job the
// alert is about: running, and started when its job_key says. A key
// cluster/jobid/start is checked against squeue's start time; a job whose
// id was reused since has another start time and is refused.
func verify(o Owner, jobID, jobKey string) error {
	if o.State != "RUNNING" {
		return fmt.Errorf("%w: state %s", errJobNotRunning, textSafe(clip(o.State, 32)))
	}
	parts := strings.Split(jobKey, "/")
	if len(parts) < 3 || parts[len(parts)-2] != jobID {
		return errNoKey
	}
	start, err := strconv.ParseInt(parts[len(parts)-1], 10, 64)
	if err != nil || start <= 0 {
		return errNoKey
	}
	if o.Start != start {
		return fmt.Errorf("%w: key start %d, Slurm's %d", errJobMismatch, start, o.Start)
	}
	return nil
}
