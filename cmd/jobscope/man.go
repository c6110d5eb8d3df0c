// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bufio"
	"fmt"
	"io"

	"github.com/spf13/pflag"

	"github.com/jobscope/jobscope/internal/manpage"
)

// writeMan writes jobscope(1) in roff from the flag set the binary parses,
// so the packaged man page cannot drift from the flags. The report's options
// are in jobscope-report(1), which that binary writes from its own flags:
// listing them here would link the report into the daemon.
func writeMan(w io.Writer, fs *pflag.FlagSet) error {
	b := bufio.NewWriter(w)
	fmt.Fprintf(b, ".TH JOBSCOPE 1 \"\" \"jobscope %s\" \"User Commands\"\n", manpage.Roff(version))
	b.WriteString(manHead)
	// The sections of --help, each sorted.
	groups := groupedFlags(fs)
	for _, g := range flagGroups() {
		b.WriteString(".SS " + manpage.Line(g.title) + "\n")
		manpage.WriteFlags(b, groups[g.name])
	}
	b.WriteString(manReport)
	b.WriteString(manTail)
	return b.Flush()
}

const manHead = `.SH NAME
jobscope \- Prometheus exporter for Slurm jobs and clusters
.SH SYNOPSIS
.B jobscope
[\fIOPTION\fR]...
.br
.B jobscope report
[\fIOPTION\fR]... \fIJOBID\fR...
.br
.B jobscope report
[\fIOPTION\fR]... \fB\-\-user\fR \fIU\fR | \fB\-\-account\fR \fIA\fR | \fB\-\-partition\fR \fIP\fR
.SH DESCRIPTION
In node mode (the default), on every compute node, jobscope reports per\-job
metrics from cgroupfs, eBPF programs, procfs, NVIDIA GPUs and power meters.
In controller mode, once per cluster, it reports cluster metrics from the Slurm
commands (squeue, sinfo, sacct, sshare, sdiag), run once per poll interval
whatever the number of scrapes.
Prometheus scrapes /metrics (port 10817 by default).
.PP
Every \fB\-\-collector.\fR\fIname\fR flag turns one collector on or off
(\fB\-\-collector.\fR\fIname\fR\fB=false\fR); the mode picks the defaults.
.SH OPTIONS
`

const manReport = `.SH JOBSCOPE REPORT
\fBjobscope report\fR reads a job's series back from Prometheus (and sacct,
where it runs) and prints its efficiency over its whole life and per node: CPU
and per\-core balance, memory peak against the request and OOM kills, GPUs,
IO, network, energy; warnings with advice (thresholds in
/etc/jobscope/report.yml); as text, JSON or one HTML page. With \fB\-\-user\fR,
\fB\-\-account\fR or \fB\-\-partition\fR it sums jobs over a period from the
jobscope\-usage recording rules. Exit status: 0 report written; 1 unknown job,
no samples or Prometheus failing; 2 bad flags or configuration; 3 a job id used
by several jobs; 127 jobscope\-report is not installed.
.PP
\fBjobscope report\fR runs the \fBjobscope\-report\fR binary (the one next
to jobscope, else the first in \fBPATH\fR) with the same arguments; both
packages install it. Its options are in
.BR jobscope\-report (1).
`

const manTail = `.SH FILES
.TP
.I /etc/default/jobscope \fR(Debian), \fI/etc/sysconfig/jobscope \fR(RPM)
Flags for the systemd units: \fBARGS\fR for jobscope.service (node mode),
\fBCONTROLLER_ARGS\fR for jobscope\-controller.service. They come after the
unit's own flags, so they win.
.TP
.I /usr/lib/systemd/system/jobscope.service
Node mode, as user jobscope with the capabilities its header comment justifies.
The package enables and starts it on install where systemd runs.
.TP
.I /usr/lib/systemd/system/jobscope\-controller.service
Controller mode, without capabilities; not enabled on install.
.TP
.I /usr/share/jobscope/slurm/
Prolog and epilog scripts that write each job's metadata to /run/jobscope/jobs
and its GPUs to /run/jobscope/gpu\-jobs. The package never edits slurm.conf:
link the scripts into the directories slurm.conf names, on every compute node:
.PP
.RS
.nf
ln \-s /usr/share/jobscope/slurm/prolog.sh /etc/slurm/prolog.d/jobscope.sh
ln \-s /usr/share/jobscope/slurm/epilog.sh /etc/slurm/epilog.d/jobscope.sh
ln \-s /usr/share/jobscope/slurm/prolog.d/jobscope\-gpu\-mapping.sh /etc/slurm/prolog.d/
ln \-s /usr/share/jobscope/slurm/epilog.d/jobscope\-gpu\-mapping.sh /etc/slurm/epilog.d/
.fi
.RE
.IP
with these lines in slurm.conf:
.PP
.RS
.nf
Prolog=/etc/slurm/prolog.d/*
Epilog=/etc/slurm/epilog.d/*
PrologFlags=Alloc
.fi
.RE
.TP
.I /usr/share/jobscope/prometheus/\fR, \fI/usr/share/jobscope/grafana/
Prometheus scrape configuration, recording and alerting rules; Grafana dashboard.
.TP
.I /etc/jobscope/report.yml
\fBjobscope report\fR's site defaults: Prometheus URL, credentials and TLS,
lookback, warning thresholds.
.TP
.I /usr/share/jobscope/slurm/epilog.d/jobscope\-report.sh
Writes each job's report into its working directory at job end, as the job's
user; off until /etc/jobscope/report\-epilog.conf says ENABLE=yes.
.TP
.I /sys/fs/bpf/jobscope
The ebpf collector's pinned maps, kept across restarts; a purge of the package
removes them.
.SH SEE ALSO
.BR jobscope\-report (1),
.BR slurm.conf (5),
.BR bpftool (8)
.PP
https://github.com/jobscope/jobscope
`
