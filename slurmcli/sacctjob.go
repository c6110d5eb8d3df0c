// SPDX-License-Identifier: Apache-2.0

package slurmcli

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// SacctRecord is one job's allocation line of sacct: what the job report
// needs when Prometheus lacks it (submit time, time limit, final state).
type SacctRecord struct {
	ID, Name, User, Account, Partition, Cluster string
	State                                       string // upper case, first word ("CANCELLED" for "CANCELLED by 1001")
	ExitCode                                    string
	Submit, Start, End                          time.Time // zero when sacct says Unknown or None
	Elapsed                                     time.Duration
	TimeLimit                                   time.Duration // 0: unlimited or unknown
	AllocCPUs                                   int
	AllocTRES                                   TRES
	NNodes                                      int
	NodeList                                    string
	TotalCPU                                    time.Duration // user+system of the finished steps
	CPUTimeRaw                                  float64       // allocated core-seconds (AllocCPUS x Elapsed)
}

// Running reports whether the job had not ended when sacct answered.
func (r SacctRecord) Running() bool { return r.End.IsZero() && !r.Start.IsZero() }

// SacctRecordFormat is the column list SacctRecordArgs asks for. JobName,
// which the job's user chooses (and a step's name, srun -J), comes last:
// see splitRecords.
const SacctRecordFormat = "JobIDRaw,User,Account,Partition,Cluster,State,ExitCode,Submit,Start,End," +
	"ElapsedRaw,TimelimitRaw,AllocCPUS,AllocTRES,NNodes,NodeList,TotalCPU,CPUTimeRAW,JobName"

// SacctRecordArgs asks for every job that used id (--duplicates: after a
// job-id reset an id can name several jobs) on cluster ("" for sacct's
// default cluster), its fields joined by sep (NewSeparator). Steps are
// listed too: with -X, Slurm 22.05 prints a TotalCPU of 0 on the
// allocation line; without it, the sum of the steps.
func SacctRecordArgs(id, cluster, sep string) []string {
	args := []string{"-P", "--delimiter=" + sep, "-D", "-a", "-j", id, "--format=" + SacctRecordFormat}
	if cluster != "" {
		args = append(args, "-M", cluster)
	}
	return args
}

// SacctRecords runs sacct for one job id; id must be a plain job id. A
// *RefusedError (Partial) comes with good records: some were left out.
func SacctRecords(ctx context.Context, r *Runner, id, cluster string, loc *time.Location) ([]SacctRecord, error) {
	if !validJobID(id) {
		return nil, fmt.Errorf("sacct: refusing job id %q", id)
	}
	if strings.ContainsAny(cluster, ", \t\n") {
		return nil, fmt.Errorf("sacct: refusing cluster %q", cluster)
	}
	sep := NewSeparator()
	out, err := r.Run(ctx, "sacct", SacctRecordArgs(id, cluster, sep)...)
	if err != nil {
		return nil, err
	}
	recs, ref, err := ParseSacctRecords(bytes.NewReader(out), loc, sep)
	if err != nil {
		r.Stats().ParseError("sacct")
		return nil, err
	}
	return recs, r.refused("sacct", ref)
}

// pipeRow is one line of a `-P` table: its line number and a lookup of
// its raw (untrimmed) field by column name ("" for a column not there).
type pipeRow struct {
	line int
	get  func(string) string
}

// pipeTable reads the `-P` output of cmd (sacct, sshare) with its header
// line, finding columns by name whatever the version adds or reorders.
// need lists the columns that must be there.
func pipeTable(r io.Reader, cmd string, need ...string) ([]pipeRow, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	if !sc.Scan() {
		if err := sc.Err(); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("%s: empty output", cmd)
	}
	header := strings.Split(sc.Text(), "|")
	col := map[string]int{}
	for i, h := range header {
		if _, dup := col[strings.TrimSpace(h)]; !dup {
			col[strings.TrimSpace(h)] = i
		}
	}
	for _, n := range need {
		if _, ok := col[n]; !ok {
			return nil, fmt.Errorf("%s: no %s column in header %q", cmd, n, sc.Text())
		}
	}
	var rows []pipeRow
	line := 1
	for sc.Scan() {
		line++
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		f := strings.Split(sc.Text(), "|")
		if len(f) < len(header) {
			return nil, fmt.Errorf("%s line %d: %d fields, header has %d", cmd, line, len(f), len(header))
		}
		rows = append(rows, pipeRow{line: line, get: func(name string) string {
			if i, ok := col[name]; ok {
				return f[i]
			}
			return ""
		}})
	}
	return rows, sc.Err()
}

// trimmed is a row's field without surrounding spaces.
func (p pipeRow) trimmed(name string) string { return strings.TrimSpace(p.get(name)) }

// ParseSacctRecords reads `sacct -P --delimiter=sep --format=...` output
// with its header (columns are found by name) and keeps the allocation
// lines (step lines, "42.batch", are left out); times are in loc (sacct
// prints local times without a zone). Records that cannot be read, and
// every record of a job printed twice (same id and submit time: --duplicates
// lists a reused id once per job), are left out and counted in Refused.
func ParseSacctRecords(r io.Reader, loc *time.Location, sep string) ([]SacctRecord, Refused, error) {
	if loc == nil {
		loc = time.Local
	}
	// The header decides the number of fields and where each column is,
	// whatever a version adds or reorders.
	br := bufio.NewReader(r)
	head, long, err := readLine(br, maxRecordBytes)
	switch {
	case errors.Is(err, io.EOF):
		return nil, Refused{}, errors.New("sacct: empty output")
	case err != nil:
		return nil, Refused{}, err
	case long:
		return nil, Refused{}, errors.New("sacct: header line too long")
	}
	names := strings.Split(head, sep)
	col := make(map[string]int, len(names))
	for i, h := range names {
		if _, dup := col[h]; !dup {
			col[h] = i
		}
	}
	for _, n := range []string{"JobIDRaw", "State", "Start", "End"} {
		if _, ok := col[n]; !ok {
			return nil, Refused{}, fmt.Errorf("sacct: no %s column in header %q", n, head)
		}
	}
	var out []SacctRecord
	ref, err := splitRecords(br, sep, len(names), func(_ int, f []string) error {
		get := func(name string) string {
			if i, ok := col[name]; ok {
				return strings.TrimSpace(f[i])
			}
			return ""
		}
		if strings.Contains(get("JobIDRaw"), ".") {
			return nil
		}
		rec, err := sacctRecord(get, loc)
		if err != nil {
			return err
		}
		out = append(out, rec)
		return nil
	})
	if err != nil {
		return nil, ref, err
	}
	out = dropDuplicates(out, func(r SacctRecord) string { return r.ID + " submitted " + r.Submit.String() }, &ref)
	return out, ref, nil
}

func sacctRecord(get func(string) string, loc *time.Location) (SacctRecord, error) {
	state, _, _ := strings.Cut(get("State"), " ")
	rec := SacctRecord{
		ID: get("JobIDRaw"), Name: get("JobName"), User: get("User"), Account: get("Account"),
		Partition: get("Partition"), Cluster: get("Cluster"), State: strings.ToUpper(state),
		ExitCode: get("ExitCode"), NodeList: get("NodeList"),
	}
	if !validJobID(rec.ID) {
		return rec, fmt.Errorf("job id %q", rec.ID)
	}
	var err error
	for _, t := range []struct {
		col string
		dst *time.Time
	}{{"Submit", &rec.Submit}, {"Start", &rec.Start}, {"End", &rec.End}} {
		if *t.dst, err = sacctTimeValue(get(t.col), loc); err != nil {
			return rec, fmt.Errorf("%s: %w", t.col, err)
		}
	}
	ints := []struct {
		col string
		dst *int
	}{{"AllocCPUS", &rec.AllocCPUs}, {"NNodes", &rec.NNodes}}
	for _, c := range ints {
		if v := get(c.col); v != "" {
			if *c.dst, err = strconv.Atoi(v); err != nil {
				return rec, fmt.Errorf("%s %q: %w", c.col, v, err)
			}
		}
	}
	if v := get("ElapsedRaw"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return rec, fmt.Errorf("ElapsedRaw %q", v)
		}
		rec.Elapsed = time.Duration(n) * time.Second
	}
	// TimelimitRaw is in minutes; "UNLIMITED", "Partition_Limit" or empty
	// leave it unknown.
	if n, err := strconv.ParseInt(get("TimelimitRaw"), 10, 64); err == nil && n > 0 && n < 1<<31 {
		rec.TimeLimit = time.Duration(n) * time.Minute
	}
	if v := get("AllocTRES"); v != "" {
		if rec.AllocTRES, err = ParseTRES(v); err != nil {
			return rec, err
		}
	}
	if v := get("TotalCPU"); v != "" {
		if rec.TotalCPU, err = ParseSlurmDuration(v); err != nil {
			return rec, fmt.Errorf("TotalCPU: %w", err)
		}
	}
	if v := get("CPUTimeRAW"); v != "" {
		if rec.CPUTimeRaw, err = strconv.ParseFloat(v, 64); err != nil || rec.CPUTimeRaw < 0 {
			return rec, fmt.Errorf("CPUTimeRAW %q", v)
		}
	}
	return rec, nil
}

// sacctTimeValue reads sacct's ISO local time; Unknown, None and empty are
// the zero time.
func sacctTimeValue(s string, loc *time.Location) (time.Time, error) {
	switch s {
	case "", "Unknown", "None":
		return time.Time{}, nil
	}
	return time.ParseInLocation(sacctTime, s, loc)
}

// ParseSlurmDuration reads Slurm's [DD-][HH:]MM:SS[.mmm] durations
// (TotalCPU "01:05.416", Elapsed "1-02:03:04").
func ParseSlurmDuration(s string) (time.Duration, error) {
	orig := s
	var days int64
	if d, rest, ok := strings.Cut(s, "-"); ok {
		n, err := strconv.ParseInt(d, 10, 64)
		if err != nil || n < 0 || n > 1e6 {
			return 0, fmt.Errorf("duration %q: days", orig)
		}
		days, s = n, rest
	}
	parts := strings.Split(s, ":")
	if len(parts) < 2 || len(parts) > 3 {
		return 0, fmt.Errorf("duration %q: want [DD-][HH:]MM:SS", orig)
	}
	sec, err := strconv.ParseFloat(parts[len(parts)-1], 64)
	if err != nil || sec < 0 || sec >= 61 {
		return 0, fmt.Errorf("duration %q: seconds", orig)
	}
	total := sec
	for i, mul := range []float64{60, 3600} {
		j := len(parts) - 2 - i
		if j < 0 {
			break
		}
		n, err := strconv.ParseUint(parts[j], 10, 32)
		if err != nil || n >= 1e6 {
			return 0, fmt.Errorf("duration %q: field %q", orig, parts[j])
		}
		total += float64(n) * mul
	}
	total += float64(days) * 86400
	return time.Duration(total * float64(time.Second)), nil
}

// validJobID accepts a job id as Slurm prints it: digits, optionally an
// array task (_N) or a het-job offset (+N); nothing a command could read
// as an option.
func validJobID(s string) bool {
	if s == "" || len(s) > 32 || s[0] < '0' || s[0] > '9' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c == '_' || c == '+') {
			return false
		}
	}
	return true
}
