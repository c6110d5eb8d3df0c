#!/bin/sh
# jobscope job report at job end: writes `jobscope report <jobid>` into the
# job's working directory, as the job's user, for users who never run
# commands. OFF unless /etc/jobscope/report-epilog.conf says ENABLE=yes
# (docs/report.md, "Reports at job end").
#
# Slurm node epilog (slurm.conf Epilog=...); it runs on the job's first
# node only. It never fails the epilog (a failing epilog drains the node)
# and never makes slurmd wait: the report runs detached, after DELAY
# seconds, so that slurmdbd has the job's end and Prometheus its last
# scrape. The file is created by the user, never by root, so a link or a
# directory the user controls cannot redirect a root write.
#
# report-epilog.conf (KEY=value lines, read, never sourced):
#   ENABLE=yes            turn the report on (anything else: off)
#   FORMAT=text           text or html
#   NAME=jobscope-%j.txt  file name in the working directory (%j: job id)
#   DELAY=60              seconds to wait before reporting
#   BIN=/usr/local/bin/jobscope
#   CONFIG=/etc/jobscope/report.yml   the report's site configuration (readable by users)
#   TIMEOUT=120           longest a report may take
#   LOG=                  file the report's errors are appended to (default: syslog)

PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export PATH
conf=${JOBSCOPE_REPORT_EPILOG_CONF:-/etc/jobscope/report-epilog.conf}

get() { # KEY DEFAULT: the last KEY=value of the conf file
	v=$(sed -n "s/^$1=//p" "$conf" 2>/dev/null | tail -n 1)
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
delay=$(get DELAY 60)
limit=$(get TIMEOUT 120)
case $delay$limit in *[!0-9]*) note "DELAY and TIMEOUT must be whole seconds"; exit 0 ;; esac
bin=$(get BIN /usr/local/bin/jobscope)
cfg=$(get CONFIG /etc/jobscope/report.yml)
[ -x "$bin" ] || { note "$bin is not executable"; exit 0; }

[ -n "$logfile" ] && note "report in ${delay}s into $dir/$name"

# Detached from slurmd in its own session (with its notes' pipe, so that
# nothing of it is in the epilog's process group when slurmd ends it).
setsid sh -c '
	sleep "$1"
	{
		cd "$2" || exit 0
		timeout "$3" runuser -u "$4" -- "$5" report --config="$6" --reused=latest --color=never \
			--format="$7" --output="$2/$8" "$9"
		echo "job $9: jobscope report exited $? writing $2/$8"
	} 2>&1 | ${10}
' jobscope-report "$delay" "$dir" "$limit" "$user" "$bin" "$cfg" "$format" "$name" "$job" "$log" \
	</dev/null >/dev/null 2>&1 &
exit 0
