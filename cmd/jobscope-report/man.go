// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bufio"
	"fmt"
	"io"

	"github.com/jobscope/jobscope/cmd/jobscope-report/report"
	"github.com/jobscope/jobscope/internal/manpage"
)

// writeMan writes jobscope-report(1) in roff from the flags the report
// parses, so the packaged page cannot drift from them. jobscope(1) says
// what `jobscope report` is and points here for the options.
func writeMan(w io.Writer) error {
	b := bufio.NewWriter(w)
	fmt.Fprintf(b, ".TH JOBSCOPE\\-REPORT 1 \"\" \"jobscope %s\" \"User Commands\"\n", manpage.Roff(version))
	b.WriteString(manHead)
	manpage.WriteFlags(b, report.FlagSet())
	b.WriteString(manTail)
	return b.Flush()
}

const manHead = `.SH NAME
jobscope\-report \- a Slurm job's efficiency report, and usage summaries, from Prometheus
.SH SYNOPSIS
.B jobscope report
[\fIOPTION\fR]... \fIJOBID\fR...
.br
.B jobscope report
[\fIOPTION\fR]... \fB\-\-user\fR \fIU\fR | \fB\-\-account\fR \fIA\fR | \fB\-\-partition\fR \fIP\fR
.br
.B jobscope\-report
[\fIOPTION\fR]... \fIJOBID\fR...
.SH DESCRIPTION
\fBjobscope report\fR (which runs \fBjobscope\-report\fR with the same
arguments) reads a job's series back from Prometheus (and sacct, where it
runs) and prints its efficiency over its whole life and per node: CPU and
per\-core balance, memory peak against the request and OOM kills, GPUs, IO,
network, energy; warnings with advice (thresholds in /etc/jobscope/report.yml);
as text, JSON or one HTML page. With \fB\-\-user\fR, \fB\-\-account\fR or
\fB\-\-partition\fR it sums jobs over a period from the jobscope\-usage
recording rules.
.PP
It is a binary of its own so that the exporter, which runs with capabilities
on every compute node, links none of the report's charting, font and PDF code.
.SH OPTIONS
`

const manTail = `.SH EXIT STATUS
0 report written; 1 unknown job, no samples or Prometheus failing; 2 bad flags
or configuration; 3 a job id used by several jobs (pick one with
\fB\-\-job\-key\fR or \fB\-\-reused=latest\fR).
.SH ENVIRONMENT
.TP
.B JOBSCOPE_REPORT_CONFIG
The site configuration file, when \fB\-\-config\fR is not given.
.SH FILES
.TP
.I /etc/jobscope/report.yml
Site defaults: Prometheus URL, credentials and TLS, lookback, warning
thresholds.
.TP
.I /usr/share/jobscope/slurm/epilog.d/jobscope\-report.sh
Writes each job's report into its working directory at job end, as the job's
user; off until /etc/jobscope/report\-epilog.conf says ENABLE=yes.
.SH SEE ALSO
.BR jobscope (1),
.BR sacct (1)
.PP
https://github.com/jobscope/jobscope
`
