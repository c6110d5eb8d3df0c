// SPDX-License-Identifier: Apache-2.0

package slurmcli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"time"
)

// CommentRecord is a job's allocation line with its AdminComment, where
// jobscope keeps the job's summary (internal/js1).
type CommentRecord struct {
	SacctRecord
	AdminComment string
}

// SacctCommentFormat is the column list of SacctComments. AdminComment is
// free text (an operator's, a site script's, a summary) and may hold
// newlines: it comes last (see splitRecords).
const SacctCommentFormat = "JobIDRaw,User,Account,Cluster,State,Start,End,ElapsedRaw,AllocCPUS,AllocTRES," +
	"NNodes,NodeList,AdminComment"

// endStates are the states of a job that is over: with -S/-E, sacct lists
// the jobs that were in one of them during the window, so ended in it.
const endStates = "CA,CD,DL,F,NF,OOM,PR,TO,BF"

// CommentQuery selects jobs: one job id, or the jobs that ended between
// Since and Until. Cluster "" is sacct's default cluster.
type CommentQuery struct {
	JobID        string
	JobIDs       []string // several jobs at once (a written batch, read back)
	Since, Until time.Time
	Cluster      string
}

// SacctCommentArgs is the sacct command line of q, fields joined by sep.
func SacctCommentArgs(q CommentQuery, sep string, loc *time.Location) ([]string, error) {
	if strings.ContainsAny(q.Cluster, ", \t\n") || strings.HasPrefix(q.Cluster, "-") {
		return nil, fmt.Errorf("sacct: refusing cluster %q", q.Cluster)
	}
	args := []string{"-X", "-n", "-P", "--delimiter=" + sep, "-a", "--format=" + SacctCommentFormat}
	if q.JobID != "" {
		q.JobIDs = append(q.JobIDs, q.JobID)
	}
	switch {
	case len(q.JobIDs) > 0:
		for _, id := range q.JobIDs {
			if !validJobID(id) {
				return nil, fmt.Errorf("sacct: refusing job id %q", id)
			}
		}
		args = append(args, "-D", "-j", strings.Join(q.JobIDs, ","))
	case !q.Since.IsZero() && q.Until.After(q.Since):
		args = append(args, "-s", endStates, "-S", q.Since.In(loc).Format(sacctTime),
			"-E", q.Until.In(loc).Format(sacctTime))
	default:
		return nil, fmt.Errorf("sacct: a job id or a time window is needed")
	}
	if q.Cluster != "" {
		args = append(args, "-M", q.Cluster)
	}
	return args, nil
}

// SacctComments runs sacct for q. A *RefusedError (Partial) comes with good
// records: some were left out (a comment over maxRecordBytes among them).
func SacctComments(ctx context.Context, r *Runner, q CommentQuery, loc *time.Location) ([]CommentRecord, error) {
	sep := NewSeparator()
	args, err := SacctCommentArgs(q, sep, loc)
	if err != nil {
		return nil, err
	}
	out, err := r.Run(ctx, "sacct", args...)
	if err != nil {
		return nil, err
	}
	recs, ref, err := ParseCommentRecords(bytes.NewReader(out), loc, sep)
	if err != nil {
		r.Stats().ParseError("sacct")
		return nil, err
	}
	return recs, r.refused("sacct", ref)
}

// ParseCommentRecords reads SacctComments' output (no header, the columns
// of SacctCommentFormat). A job printed twice is left out, as forged.
func ParseCommentRecords(rd io.Reader, loc *time.Location, sep string) ([]CommentRecord, Refused, error) {
	names := strings.Split(SacctCommentFormat, ",")
	col := make(map[string]int, len(names))
	for i, n := range names {
		col[n] = i
	}
	var out []CommentRecord
	ref, err := splitRecords(rd, sep, len(names), func(_ int, f []string) error {
		get := func(name string) string {
			if i, ok := col[name]; ok {
				return strings.TrimSpace(f[i])
			}
			return ""
		}
		rec, err := sacctRecord(get, loc)
		if err != nil {
			return err
		}
		out = append(out, CommentRecord{SacctRecord: rec, AdminComment: f[len(names)-1]})
		return nil
	})
	if err != nil {
		return nil, ref, err
	}
	out = dropDuplicates(out, func(r CommentRecord) string { return r.ID + " started " + r.Start.String() }, &ref)
	return out, ref, nil
}
