#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# jobscope job report at job end: writes `jobscope report <jobid>` into the
# job's working directory, as the job's user, for users who never run
# commands. OFF unless /etc/jobscope/report-epilog.conf says ENABLE=yes
# (docs/report.md, "Reports at job end").
#
# Slurm node epilog (slurm.conf Epilog=...); it runs on the job's first
# node only. It never fails the epilog (a failing epilog drains the node)
# and holds it at most TIMEOUT seconds (a report takes about a second).
# It runs in the epilog, not detached after it: processes an epilog leaves
# behind were seen killed before they finished (Slurm 22.05). --ended
# tells the report the job is over even if slurmdbd has not recorded its
# end yet. The file is created by the user, never by root, so a link or a
# directory the user controls cannot redirect a root write.
#
# report-epilog.conf (KEY=value lines, read, never sourced):
#   ENABLE=yes            turn the report on (anything else: off)
#   FORMAT=text           text or html
#   NAME=jobscope-%j.txt  file name in the working directory (%j: job id)
#   BIN=                  the jobscope binary (default: the first jobscope in
#                         /usr/sbin:/usr/bin:/sbin:/bin, then /usr/local/sbin:/usr/local/bin;
#                         the packages install /usr/bin/jobscope; its `report`
#                         runs the jobscope-report next to it, else in PATH)
#   CONFIG=/etc/jobscope/report.yml   the report's site configuration (readable by users)
#   TIMEOUT=30            longest a report may hold the epilog
#   LOG=                  file the report's errors are appended to (default: syslog)
# A value ends at a " #" comment; lines starting with # are comments.

# The system's directories first: the packaged jobscope (/usr/bin) is the
# one this script ships with; a site's own build in /usr/local/bin is the
# fallback (BIN= picks another).
PATH=/usr/sbin:/usr/bin:/sbin:/bin:/usr/local/sbin:/usr/local/bin
export PATH
conf=${JOBSCOPE_REPORT_EPILOG_CONF:-/etc/jobscope/report-epilog.conf}

get() { # KEY DEFAULT: the last KEY=value of the conf file, without a trailing " # comment"
	v=$(sed -n "s/^$1=//p" "$conf" 2>/dev/null | tail -n 1 | sed 's/[[:space:]][[:space:]]*#.*//; s/[[:space:]]*$//')
	[ -n "$v" ] && printf '%s\n' "$v" || printf '%s\n' "$2"
}

[ -r "$conf" ] || exit 0
[ "$(get ENABLE no)" = yes ] || exit 0
job=${SLURM_JOB_ID:-}
user=${SLURM_JOB_USER:-}
case $job in '' | *[!0-9]*) exit 0 ;; esac
case $user in '' | *[!A-Za-z0-9._-]* | -*) exit 0 ;; esac

# Where notes go: LOG's file, else syslog, else nowhere.
logfile=$(get LOG "")
log="cat"
command -v logger >/dev/null 2>&1 && log="logger -t jobscope-report -p user.notice"
case $logfile in /*) log="tee -a $logfile" ;; esac
note() { printf 'job %s: %s\n' "$job" "$*" | $log >/dev/null 2>&1; }

# Multi-node jobs: one report, from the first node.
nodes=${SLURM_JOB_NODELIST:-${SLURM_NODELIST:-}}
if [ -n "$nodes" ] && [ -n "${SLURMD_NODENAME:-}" ]; then
	first=$(scontrol show hostnames "$nodes" 2>/dev/null | head -n 1)
	[ -n "$first" ] && [ "$first" != "$SLURMD_NODENAME" ] && exit 0
fi

dir=${SLURM_JOB_WORK_DIR:-}
if [ -z "$dir" ]; then
	dir=$(scontrol -o show job "$job" 2>/dev/null | tr ' ' '\n' | sed -n 's/^WorkDir=//p' | head -n 1)
fi
case $dir in /*) ;; *)
	note "no working directory (SLURM_JOB_WORK_DIR unset, scontrol gave '$dir'): no report"
	exit 0
	;;
esac

format=$(get FORMAT text)
case $format in text | html) ;; *) format=text ;; esac
ext=txt
[ "$format" = html ] && ext=html
name=$(get NAME "jobscope-%j.$ext")
case $name in */* | .* | '') note "NAME '$name' is not a plain file name"; exit 0 ;; esac
name=$(printf '%s\n' "$name" | sed "s/%j/$job/g")
limit=$(get TIMEOUT 30)
case $limit in '' | *[!0-9]*) note "TIMEOUT must be whole seconds"; exit 0 ;; esac
bin=$(get BIN "$(command -v jobscope)")
cfg=$(get CONFIG /etc/jobscope/report.yml)
[ -n "$bin" ] || { note "no jobscope in $PATH (set BIN= in $conf)"; exit 0; }
[ -x "$bin" ] || { note "$bin is not executable"; exit 0; }

cd "$dir" 2>/dev/null || { note "cannot enter $dir"; exit 0; }
{
	timeout "$limit" runuser -u "$user" -- "$bin" report --config="$cfg" --ended --reused=latest --color=never \
		--format="$format" --output="$dir/$name" "$job"
	echo "job $job: jobscope report exited $? writing $dir/$name"
} </dev/null 2>&1 | $log >/dev/null 2>&1
exit 0
