// SPDX-License-Identifier: Apache-2.0

package report

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/prometheus/common/model"

	"github.com/jobscope/jobscope/slurmcli"
)

func runJobs(ctx context.Context, o Options, f *cliFlags, ids []string, stdout, stderr io.Writer, color bool) int {
	loc := o.Location
	if loc == nil {
		loc = time.Local
	}
	status := ExitOK
	var reports []*Report
	var buf bytes.Buffer
	for i, id := range ids {
		rep, err := JobReport(ctx, o, id)
		if err != nil {
			fmt.Fprintf(stderr, "jobscope report: %v\n", err)
			status = max(status, exitFor(err))
			continue
		}
		switch f.format {
		case "json":
			reports = append(reports, rep)
			continue
		case "html":
			if strings.Contains(f.output, "%j") {
				var page bytes.Buffer
				if err := WriteHTML(&page, rep, loc); err != nil {
					fmt.Fprintf(stderr, "jobscope report: job %s: %v\n", id, err)
					status = max(status, ExitFailed)
					continue
				}
				if err := writeOut(strings.ReplaceAll(f.output, "%j", id), page.Bytes(), stdout); err != nil {
					fmt.Fprintf(stderr, "jobscope report: %v\n", err)
					status = max(status, ExitFailed)
				}
				continue
			}
			err = WriteHTML(&buf, rep, loc)
		default:
			if i > 0 && buf.Len() > 0 {
				buf.WriteString("\n" + strings.Repeat("=", Width) + "\n\n")
			}
			err = WriteText(&buf, rep, loc, color)
		}
		if err != nil {
			fmt.Fprintf(stderr, "jobscope report: job %s: %v\n", id, err)
			status = max(status, ExitFailed)
		}
	}
	if f.format == "json" && len(reports) > 0 {
		var v any = reports
		if len(ids) == 1 {
			v = reports[0]
		}
		if err := writeJSON(&buf, v); err != nil {
			return ExitFailed
		}
	}
	if buf.Len() > 0 {
		if err := writeOut(strings.ReplaceAll(f.output, "%j", strings.Join(ids, "-")), buf.Bytes(), stdout); err != nil {
			fmt.Fprintf(stderr, "jobscope report: %v\n", err)
			return ExitFailed
		}
	}
	return status
}

func runUsage(ctx context.Context, o Options, f *cliFlags, stdout, stderr io.Writer, color bool) int {
	now := time.Now()
	if o.Now != nil {
		now = o.Now()
	}
	loc := o.Location
	if loc == nil {
		loc = time.Local
	}
	until := now
	if f.until != "" {
		t, err := parseWhen(f.until, now, loc)
		if err != nil {
			fmt.Fprintf(stderr, "jobscope report: --until: %v\n", err)
			return ExitUsage
		}
		until = t
	}
	since, err := parseWhen(f.since, until, loc)
	if err != nil {
		fmt.Fprintf(stderr, "jobscope report: --since: %v\n", err)
		return ExitUsage
	}
	u, err := UsageReport(ctx, o, UsageFilter{User: f.user, Account: f.account, Partition: f.partition}, since, until)
	if err != nil {
		fmt.Fprintf(stderr, "jobscope report: %v\n", err)
		return exitFor(err)
	}
	var buf bytes.Buffer
	switch f.format {
	case "json":
		err = writeJSON(&buf, u)
	case "csv":
		err = WriteUsageCSV(&buf, u)
	default:
		err = WriteUsageText(&buf, u, loc, color, o.Config.Usage.Jobs)
	}
	if err == nil {
		err = writeOut(f.output, buf.Bytes(), stdout)
	}
	if err != nil {
		fmt.Fprintf(stderr, "jobscope report: %v\n", err)
		return ExitFailed
	}
	return ExitOK
}

// parseWhen reads a duration before ref ("30d", "12h") or a time
// (RFC 3339, "2026-01-01", "2026-01-01T08:00:00" in loc).
func parseWhen(s string, ref time.Time, loc *time.Location) (time.Time, error) {
	if d, err := model.ParseDuration(s); err == nil {
		return ref.Add(-time.Duration(d)), nil
	}
	return slurmcli.ParseSince(s, ref, loc)
}

// exitFor: a reused id and malformed input have their own status; an
// unknown job, a job without samples and Prometheus failures are 1.
func exitFor(err error) int {
	switch {
	case errors.Is(err, ErrAmbiguous):
		return ExitAmbiguous
	case errors.Is(err, ErrBadInput):
		return ExitUsage
	}
	return ExitFailed
}

// pointPair matches a chart point as the indenter spreads it over lines.
var pointPair = regexp.MustCompile(`\[\n\s+(-?[0-9.eE+-]+),\n\s+(-?[0-9.eE+-]+)\n\s+\]`)

// writeJSON indents for people and diffs, but keeps each chart point
// [time, value] on one line.
func writeJSON(w io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	b = jsonSafe(pointPair.ReplaceAll(b, []byte("[$1, $2]")))
	_, err = w.Write(append(b, '\n'))
	return err
}

// writeOut writes to stdout, or to a file replaced whole (a reader never
// sees half a report); the file is the caller's only (0600).
func writeOut(path string, b []byte, stdout io.Writer) error {
	if path == "" || path == "-" {
		_, err := stdout.Write(b)
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
