#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# jobscope job props: prolog half (POSIX sh; the epilog half is epilog.sh).
#
# Writes the job's Slurm metadata as KEY=VALUE lines to
# $JOBSCOPE_JOB_PROPS_DIR/<jobid> (default /run/jobscope/jobs, jobscope's
# --slurm.job-props-dir). It is jobscope's first and cheapest metadata
# source: no Slurm command, and it holds for jobs whose processes carry no
# Slurm environment (pam_slurm_adopt, containers) or that jobscope may not
# read (/proc/<pid>/environ needs CAP_SYS_PTRACE).
#
# Slurm 26.05 names a job's cgroup directory by its SLUID (sDVNM87TZNTA00)
# rather than job_<id>: where the prolog knows the SLUID, it links
# <SLUID> -> <jobid>, so jobscope finds the job id of such a directory.
# The directory naming does not matter here: the file is always keyed by
# SLURM_JOB_ID. Fields the prolog's environment lacks (Slurm 24.11 has no
# SLURM_JOB_NAME, SLURM_JOB_QOS or SLURM_ARRAY_* there) jobscope fills from
# the job's environment or squeue.
#
# Install on every compute node (slurm.conf):
#   Prolog=/etc/slurm/prolog.d/*      (or Prolog=/path/to/this/file)
#   Epilog=/etc/slurm/epilog.d/*
#   PrologFlags=Alloc                  (or Contain: run at allocation)
# mode 0755, owned by root. slurmd runs it as root with only Slurm's
# variables in the environment.
#
# A failing prolog drains the node, so this script exits 0 whatever happens.

dir=${JOBSCOPE_JOB_PROPS_DIR:-/run/jobscope/jobs}
job=${SLURM_JOB_ID:-}

# Only a plain job id may become a file name.
case $job in
'' | *[!0-9]*) exit 0 ;;
esac

umask 022
mkdir -p "$dir" 2>/dev/null || exit 0

# Values are written verbatim on one line: a newline in a value (a job name
# can hold anything) would forge a second key, so such values are dropped.
nl='
'
tmp="$dir/.$job.$$"
{
	for key in SLURM_JOB_ID SLURM_JOB_USER SLURM_JOB_UID SLURM_JOB_ACCOUNT \
		SLURM_JOB_PARTITION SLURM_JOB_QOS SLURM_JOB_NAME SLURM_CLUSTER_NAME \
		SLURM_ARRAY_JOB_ID SLURM_ARRAY_TASK_ID SLURM_JOB_SLUID SLURM_JOB_START_TIME \
		SLURM_JOB_GPUS; do
		eval "val=\${$key-}"
		[ -n "$val" ] || continue
		case $val in *"$nl"*) continue ;; esac
		printf '%s=%s\n' "$key" "$val"
	done
} >"$tmp" 2>/dev/null || {
	rm -f "$tmp"
	exit 0
}
# rename(2) is atomic: jobscope never reads a half-written file.
mv -f "$tmp" "$dir/$job" 2>/dev/null || {
	rm -f "$tmp"
	exit 0
}

# A SLUID is "s" and 13 characters of Crockford's base 32: nothing else
# may become a file name.
sluid=${SLURM_JOB_SLUID:-}
case $sluid in
s[0-9A-HJKMNP-TV-Z][0-9A-HJKMNP-TV-Z][0-9A-HJKMNP-TV-Z][0-9A-HJKMNP-TV-Z][0-9A-HJKMNP-TV-Z][0-9A-HJKMNP-TV-Z][0-9A-HJKMNP-TV-Z][0-9A-HJKMNP-TV-Z][0-9A-HJKMNP-TV-Z][0-9A-HJKMNP-TV-Z][0-9A-HJKMNP-TV-Z][0-9A-HJKMNP-TV-Z][0-9A-HJKMNP-TV-Z])
	ln -s "$job" "$dir/.$sluid.$$" 2>/dev/null &&
		mv -f "$dir/.$sluid.$$" "$dir/$sluid" 2>/dev/null ||
		rm -f "$dir/.$sluid.$$"
	;;
esac
exit 0
