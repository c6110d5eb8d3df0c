#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# jobscope job props: epilog half (see prolog.sh). Removes the job's props
# file and any temporary file an interrupted prolog left. jobscope only
# reads files of jobs it finds in cgroupfs, so a missed epilog costs a
# stale file, nothing more. POSIX sh; never fails (exit 0).

dir=${JOBSCOPE_JOB_PROPS_DIR:-/run/jobscope/jobs}
job=${SLURM_JOB_ID:-}

case $job in
'' | *[!0-9]*) exit 0 ;;
esac
[ -d "$dir" ] || exit 0

rm -f "$dir/$job" 2>/dev/null
for f in "$dir/.$job".*; do
	[ -f "$f" ] && rm -f "$f" 2>/dev/null
done

# The prolog's SLUID link (Slurm 26.05), only where it points at this job.
sluid=${SLURM_JOB_SLUID:-}
case $sluid in
s[0-9A-HJKMNP-TV-Z][0-9A-HJKMNP-TV-Z][0-9A-HJKMNP-TV-Z][0-9A-HJKMNP-TV-Z][0-9A-HJKMNP-TV-Z][0-9A-HJKMNP-TV-Z][0-9A-HJKMNP-TV-Z][0-9A-HJKMNP-TV-Z][0-9A-HJKMNP-TV-Z][0-9A-HJKMNP-TV-Z][0-9A-HJKMNP-TV-Z][0-9A-HJKMNP-TV-Z][0-9A-HJKMNP-TV-Z])
	[ -L "$dir/$sluid" ] && [ "$(readlink "$dir/$sluid")" = "$job" ] && rm -f "$dir/$sluid" 2>/dev/null
	for f in "$dir/.$sluid".*; do
		[ -L "$f" ] && rm -f "$f" 2>/dev/null
	done
	;;
esac
exit 0
