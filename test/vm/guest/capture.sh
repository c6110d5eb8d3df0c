#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Inside a test VM: real outputs of every Slurm command jobscope runs, text
# and JSON, with a job mix in every state, plus the cgroup v2 layout of
# running jobs, and on Slurm 25.11+ slurmctld's own metrics endpoint. Writes
# to $OUT (the payload disk); the host copies them to testdata/slurm-<ver>/.
# `test/vm/run.sh --capture B C` runs it.
set -uo pipefail

. "$(dirname "$0")/slurm.sh"
OUT=${OUT:-/payload/out/capture}

mkdir -p "$OUT"
TIMINGS=$OUT/timings.tsv
printf 'file\trc\tms\tcommand\n' >"$TIMINGS"

# cap FILE COMMAND...: stdout to $OUT/FILE, stderr beside it when there is
# any, exit code and duration in timings.tsv.
cap() {
	local f=$1 t rc
	shift
	t=$(date +%s%N)
	"$@" >"$OUT/$f" 2>"$OUT/$f.stderr"
	rc=$?
	printf '%s\t%s\t%s\t%s\n' "$f" "$rc" "$((($(date +%s%N) - t) / 1000000))" "$*" >>"$TIMINGS"
	[ -s "$OUT/$f.stderr" ] || rm -f "$OUT/$f.stderr"
	return 0
}
# sh_cap FILE SHELL-TEXT: cap through sh -c (pipelines, loops).
sh_cap() { cap "$1" sh -c "$2"; }

SACCT_FMT=JobIDRaw,State,Partition,Account,End
SACCT_STATES=BF,CA,CD,DL,F,NF,OOM,PR,TO
SQUEUE_FMT='%i|%A|%F|%K|%j|%T|%r|%P|%u|%U|%a|%q|%C|%D|%m|%b|%l|%M|%L|%V|%S|%e|%N|%Q'

# slurmrestd (jobscope's --slurm.source=slurmrestd) on a unix socket with
# rest_auth/local. It refuses to run as root or SlurmUser (or their groups),
# so it runs as a user of its own, and is asked as that user.
RESTD_USER=jsrestd
RESTD_SOCK=/run/jsrestd/slurmrestd.sock
RESTD_VERSIONS=""
as_restd() { setpriv --reuid="$RESTD_USER" --regid="$RESTD_USER" --init-groups "$@"; }
restd_start() {
	local v
	command -v slurmrestd >/dev/null || { log "no slurmrestd in this image"; return 0; }
	id "$RESTD_USER" >/dev/null 2>&1 || useradd --system --user-group --no-create-home --shell /usr/sbin/nologin "$RESTD_USER"
	install -d -m 0750 -o "$RESTD_USER" -g "$RESTD_USER" "$(dirname "$RESTD_SOCK")"
	setsid setpriv --reuid="$RESTD_USER" --regid="$RESTD_USER" --init-groups \
		slurmrestd -a rest_auth/local "unix:$RESTD_SOCK" >/var/log/slurm/slurmrestd.log 2>&1 </dev/null &
	wait_for 60 slurmrestd test -S "$RESTD_SOCK" || { log "slurmrestd did not start: $(tail -3 /var/log/slurm/slurmrestd.log)"; return 0; }
	# Every data_parser version it answers (newer ones than jobscope knows
	# included, to see them coming).
	for v in v0.0.36 v0.0.37 v0.0.38 v0.0.39 v0.0.40 v0.0.41 v0.0.42 v0.0.43 v0.0.44 v0.0.45 v0.0.46; do
		[ "$(restd_code /dev/null "/slurm/$v/ping")" = 200 ] && RESTD_VERSIONS+=" $v"
	done
	echo "${RESTD_VERSIONS# }" >"$OUT/restd-versions.txt"
	printf 'file\thttp\tms\turl\n' >"$OUT/restd-status.tsv"
	log "slurmrestd $(slurmrestd -V 2>&1) answers:$RESTD_VERSIONS"
}
# restd_code FILE PATH: GET PATH as RESTD_USER, the body to FILE, the HTTP
# status printed.
restd_code() {
	# The body goes through stdout into a file this shell opens: RESTD_USER
	# may not write into $OUT.
	# shellcheck disable=SC2069 # the status (stderr) to the caller, the body to FILE
	as_restd curl -sS --max-time 60 --unix-socket "$RESTD_SOCK" -w '%{stderr}%{http_code}' "http://slurmrestd$2" 2>&1 >"$1"
}
# rcap FILE PATH: restd_code into $OUT/FILE, logged in restd-status.tsv.
rcap() {
	local t code
	t=$(date +%s%N)
	code=$(restd_code "$OUT/$1" "$2")
	printf '%s\t%s\t%s\t%s\n' "$1" "$code" "$((($(date +%s%N) - t) / 1000000))" "$2" >>"$OUT/restd-status.tsv"
}
# restd WHEN: /jobs, /nodes, /diag of every version, then a conditional
# /jobs with the full answer's last_update (now where it prints none).
restd() {
	local w=$1 v p since
	for v in $RESTD_VERSIONS; do
		for p in jobs nodes diag; do rcap "restd-$p-$v-$w.json" "/slurm/$v/$p"; done
		since=$(jq -r '.last_update // empty | if type == "object" then .number else . end' "$OUT/restd-jobs-$v-$w.json" 2>/dev/null)
		rcap "restd-jobs-since-$v-$w.json" "/slurm/$v/jobs?update_time=${since:-$(date +%s)}"
	done
}
# restd_who: who rest_auth/local lets in besides slurmrestd's own user:
# root, and another user, on a socket opened to all for these two requests.
restd_who() {
	local v=${RESTD_VERSIONS##* }
	[ -n "$v" ] || return 0
	chmod 0711 "$(dirname "$RESTD_SOCK")"
	chmod 0666 "$RESTD_SOCK"
	printf '(root)\t%s\t-\t/slurm/%s/ping\n' "$(curl -sS --max-time 60 --unix-socket "$RESTD_SOCK" -o /dev/null -w '%{http_code}' "http://slurmrestd/slurm/$v/ping" 2>&1 | tr '\n' ' ')" "$v" >>"$OUT/restd-status.tsv"
	printf '(alice)\t%s\t-\t/slurm/%s/ping\n' "$(runuser -u alice -- curl -sS --max-time 60 --unix-socket "$RESTD_SOCK" -o /dev/null -w '%{http_code}' "http://slurmrestd/slurm/$v/ping" 2>&1 | tr '\n' ' ')" "$v" >>"$OUT/restd-status.tsv"
	chmod 0750 "$(dirname "$RESTD_SOCK")"
	chmod 0600 "$RESTD_SOCK"
}

# commands WHEN: every command jobscope runs (slurmcli/), and those its
# engineers need to read (scontrol show job -d, res, lic, SLUIDs).
commands() {
	local w=$1 j since
	since=$(date -d '-2 hours' +%Y-%m-%dT%H:%M:%S)
	cap "squeue-$w.json" squeue --json --all
	cap "squeue-r-$w.txt" squeue -h -a -r -o "$SQUEUE_FMT"
	cap "squeue-default-$w.txt" squeue -a
	cap "squeue-O-jobid-sluid-$w.txt" squeue -a -r -O JobID,Sluid,ArrayJobID,ArrayTaskID,State,Reason
	cap "sinfo-$w.json" sinfo --json
	# slurmrestd's answers of the same moment.
	restd "$w"
	cap "sinfo-default-$w.txt" sinfo
	cap "sinfo-N-$w.txt" sinfo -N -l
	cap "sinfo-R-$w.txt" sinfo -R
	cap "scontrol-show-node-o-$w.txt" scontrol -o show node
	cap "scontrol-show-node-$w.txt" scontrol show node
	cap "scontrol-show-partition-o-$w.txt" scontrol -o show partition
	cap "scontrol-show-job-o-$w.txt" scontrol -o show job
	cap "scontrol-show-job-d-$w.txt" scontrol show job -d
	cap "scontrol-show-res-$w.txt" scontrol show res
	cap "scontrol-show-lic-$w.txt" scontrol show lic
	cap "scontrol-show-res-$w.json" scontrol show res --json
	cap "scontrol-show-lic-$w.json" scontrol show lic --json
	cap "sdiag-$w.txt" sdiag
	cap "sdiag-$w.json" sdiag --json
	cap "sshare-$w.txt" sshare -a -P -l
	cap "sshare-default-$w.txt" sshare -a
	cap "sacct-X-$w.txt" sacct -a -X -P -s "$SACCT_STATES" -S "$since" -E now --format="$SACCT_FMT"
	cap "sacct-all-$w.txt" sacct -a -P -S "$since" -E now \
		--format=JobID,JobIDRaw,JobName,User,Account,Partition,QOS,State,ExitCode,Elapsed,TotalCPU,MaxRSS,ReqMem,AllocTRES,NodeList,Reason,End
	cap "sacct-$w.json" sacct -a --json -S "$since" -E now
	cap "sacctmgr-assoc-$w.txt" sacctmgr -P show assoc
	# Node mode asks scontrol per job: one file per job in the queue.
	for j in $(squeue -h -a -r -o %i | sort -u); do
		cap "scontrol-show-job-o-$j-$w.txt" scontrol -o show job "$j"
	done
}

# layout WHEN: the slurmstepd scope as Slurm's cgroup/v2 plugin wrote it,
# job-level files, and what a job process carries.
layout() {
	local w=$1 scope d f p
	scope=$(find /sys/fs/cgroup/system.slice -maxdepth 1 -name '*slurmstepd.scope' | head -1)
	{
		echo "# find $scope -printf '%y %P\\n' (d = directory, f = file)"
		[ -n "$scope" ] && find "$scope" -printf '%y %P\n' | sort -k2
	} >"$OUT/cgroup-v2-find-$w.txt"
	{
		echo "# directories only"
		[ -n "$scope" ] && find "$scope" -type d -printf '%P\n' | sort
		echo "# cgroup.subtree_control, top down"
		for d in /sys/fs/cgroup /sys/fs/cgroup/system.slice "$scope"; do
			echo "$d: $(cat "$d/cgroup.subtree_control" 2>/dev/null)"
		done
		for d in "$scope"/*/; do
			[ -d "$d" ] || continue
			echo "$d: controllers=[$(cat "$d/cgroup.controllers")] subtree_control=[$(cat "$d/cgroup.subtree_control")]"
		done
	} >"$OUT/cgroup-v2-dirs-$w.txt"
	# Every readable file of each job-level directory (what jobscope reads:
	# memory.*, cpu.stat, cpuset.*, io.stat, pids.*, *.pressure).
	{
		for d in "$scope"/*/; do
			[ -d "$d" ] || continue
			case $(basename "$d") in system | slurm) continue ;; esac
			echo "######## $d"
			for f in "$d"*; do
				[ -f "$f" ] && [ -r "$f" ] || continue
				case $(basename "$f") in cgroup.kill | memory.reclaim | cgroup.procs | cgroup.threads) continue ;; esac
				echo "=== $(basename "$f")"
				cat "$f" 2>&1 | head -40
			done
		done
	} >"$OUT/cgroup-v2-job-files-$w.txt"
	# Processes of the jobs: cgroup, environment (NUL -> newline), status.
	{
		for p in $(find "$scope" -name cgroup.procs -exec cat {} + 2>/dev/null | sort -un); do
			[ -r "/proc/$p/cmdline" ] || continue
			echo "######## pid $p: $(tr '\0' ' ' <"/proc/$p/cmdline")"
			echo "=== /proc/$p/cgroup"
			cat "/proc/$p/cgroup"
			echo "=== /proc/$p/status (Uid, Cpus_allowed_list)"
			grep -E '^(Uid|Gid|Cpus_allowed_list):' "/proc/$p/status"
			echo "=== /proc/$p/environ"
			tr '\0' '\n' <"/proc/$p/environ" | sort
		done
	} >"$OUT/job-procs-cgroup-environ-$w.txt"
}

# metrics WHEN: slurmctld's own OpenMetrics endpoints (25.11 and later).
metrics() {
	local w=$1 e
	for e in jobs nodes partitions scheduler jobs-users-accts; do
		cap "native-metrics-$e-$w.txt" curl -sS --max-time 20 "http://$NODE:6817/metrics/$e"
	done
	cat "$OUT"/native-metrics-*-"$w".txt | grep -E '^[a-zA-Z_:]' | sed -E 's/[{ ].*//' | sort -u >"$OUT/native-metric-names-$w.txt"
}

# --- cluster -----------------------------------------------------------------

VER=$(slurmd -V | awk '{print $2}')
MAJOR=${VER%.*}
log "Slurm $VER, kernel $(uname -r), systemd $(systemctl --version | head -1 | awk '{print $2}')"
NATIVE=no
case $MAJOR in 2[6-9].* | 25.11) NATIVE=yes ;; esac
extra=()
[ "$NATIVE" = yes ] && extra+=("MetricsType=metrics/openmetrics")
# node2: a second slurmd on the same VM (Debian builds Slurm with
# multiple-slurmd support), drained with a reason.
VM_NODE_MEM=2600
write_slurm_conf "${extra[@]}"
TOPO=$(grep "^NodeName=$NODE " "$SLURM_ETC/slurm.conf" | sed -E "s/^NodeName=$NODE NodeAddr=[^ ]+ //")
echo "NodeName=node2 NodeHostname=$NODE NodeAddr=127.0.1.1 Port=6820 ${TOPO/RealMemory=2600/RealMemory=1000}" >>"$SLURM_ETC/slurm.conf"
sed -i "s/^PartitionName=batch Nodes=$NODE /PartitionName=batch Nodes=$NODE,node2 /" "$SLURM_ETC/slurm.conf"
install_jobscope_hooks "$SRC"
# The environment slurmd gives a prolog, kept for the metadata issue.
cat >"$SLURM_ETC/prolog.d/90-capture-env.sh" <<'EOF'
#!/bin/sh
mkdir -p /var/tmp/prolog-env && env | sort >/var/tmp/prolog-env/$SLURM_JOB_ID
exit 0
EOF
chmod 755 "$SLURM_ETC/prolog.d/90-capture-env.sh"
start_slurm
heartbeat
systemd-run --unit=slurmd-node2 -p Delegate=yes /usr/sbin/slurmd -D -N node2 >/dev/null 2>&1 ||
	log "second slurmd (node2) did not start"
wait_for 60 node2 sh -c "sinfo -h -n node2 -o %T | grep -qx idle" || log "node2 not idle: $(sinfo -h -n node2 -o '%T %E')"
scontrol update nodename=node2 state=drain reason="disk replaced, burn-in pending"
setup_users
write_jobs
restd_start
restd_who
mkdir -p "$OUT/etc"
cp "$SLURM_ETC"/slurm.conf "$SLURM_ETC"/cgroup.conf "$OUT/etc/"
log "cluster up: $(sinfo -h -N -o '%N %T' | paste -sd' ' -)"

# Reservations: one active for alice on the drained node, one maintenance
# window in the future on node1.
scontrol create reservation reservationname=node2_alice starttime=now duration=120 nodes=node2 users=alice flags=ignore_jobs >/dev/null ||
	log "reservation node2_alice failed"
scontrol create reservation reservationname=maint_window starttime=now+2hours duration=60 nodes=ALL users=root flags=maint,ignore_jobs >/dev/null ||
	log "reservation maint_window failed"

# --- job mix -----------------------------------------------------------------

Q=()
[ "$DBD" = yes ] && Q=(--qos=high)
J_TRUE=$(submit alice physics debug true.sh -n1 --mem=20M -J "done")
J_FAIL=$(submit bob chemistry debug fail.sh -n1 --mem=20M -J failer)
J_OOMDIE=$(submit bob chemistry batch oomdie.sh -n1 --mem=100M -J oomdie)
J_BURN=$(submit alice physics debug burn.sh -n1 --mem=100M -J burner "${Q[@]}" --export=ALL,BURN_S=120)
J_HOLD=$(submit bob chemistry batch hold.sh -n1 --mem=600M -J holder -L matlab:1)
J_WRITE=$(submit alice chemistry batch write.sh -n1 --mem=300M -J writer --export=ALL,WRITE_MB=100)
J_OOM=$(submit bob chemistry batch oom.sh -n1 --mem=100M -J oomer)
J_NET=$(submit alice physics batch net.sh -n1 --mem=100M -J network)
J_STEPS=$(submit alice physics batch steps.sh -n2 --mem=200M -J steps --export=ALL,STEP_S=60)
J_ARR=$(submit bob chemistry batch sleep.sh -n1 --mem=50M -J arr --array=1-4%2 --export=ALL,SLEEP_S=120)
J_LIC1=$(submit alice physics batch sleep.sh -n1 --mem=50M -J lic1 -L fluent:2 --export=ALL,SLEEP_S=900)
J_LIC2=$(submit bob chemistry batch sleep.sh -n1 --mem=50M -J lic2 -L fluent:2)
J_HELD=$(submit alice physics debug sleep.sh -n1 --mem=50M -J held --hold)
J_BEGIN=$(submit alice physics debug sleep.sh -n1 --mem=50M -J later --begin=now+1hour)
J_TWO=$(submit bob chemistry batch sleep.sh -N2 -n2 --mem=50M -J twonodes)
J_CANC=$(submit alice physics debug sleep.sh -n1 --mem=50M -J cancelled --begin=now+1hour)
J_TIME=$(submit alice physics batch sleep.sh -n1 --mem=20M -J timeout -t 1)
scancel "$J_CANC"
log "jobs: true=$J_TRUE fail=$J_FAIL oomdie=$J_OOMDIE burn=$J_BURN hold=$J_HOLD write=$J_WRITE oom=$J_OOM net=$J_NET steps=$J_STEPS arr=$J_ARR lic=$J_LIC1,$J_LIC2 held=$J_HELD begin=$J_BEGIN two=$J_TWO canc=$J_CANC time=$J_TIME"
{
	echo "true=$J_TRUE fail=$J_FAIL oomdie=$J_OOMDIE burn=$J_BURN hold=$J_HOLD write=$J_WRITE oom=$J_OOM"
	echo "net=$J_NET steps=$J_STEPS arr=$J_ARR lic1=$J_LIC1 lic2=$J_LIC2 held=$J_HELD begin=$J_BEGIN"
	echo "twonodes=$J_TWO cancelled=$J_CANC timeout=$J_TIME"
} >"$OUT/jobs.txt"
running() { [ "$(job_state "$1")" = RUNNING ]; }
MIX="$J_BURN $J_HOLD $J_WRITE $J_OOM $J_NET $J_STEPS $J_LIC1"
all_running() { for j in $MIX; do running "$j" || return 1; done; }
if ! wait_for 240 "the mix running" all_running; then
	for j in $MIX; do running "$j" || log "job $j not running: $(explain_job "$j")"; done
fi
wait_for 120 output out_has "$J_HOLD" holding || log "holder not holding"
wait_for 120 output out_has "$J_WRITE" written || log "writer not done"
wait_for 120 output out_has "$J_OOM" "oom rc=" || log "oomer not done"
wait_for 120 output out_has "$J_NET" received || log "network job not done"
wait_for 60 oomdie sh -c "sacct -n -X -j $J_OOMDIE -o State | grep -q OUT_OF" || log "oomdie not ended OOM"
log "running: $(squeue -h -t R -o %i | paste -sd, -); pending: $(squeue -h -t PD -o '%i:%r' | paste -sd' ' -)"

# --- captures while the mix runs ----------------------------------------------

commands running
layout running
[ "$NATIVE" = yes ] && metrics running
cp -r /var/tmp/prolog-env "$OUT/prolog-env" 2>/dev/null
sh_cap slurmd-unit.txt 'systemctl cat slurmd; systemctl show slurmd -p Delegate -p KillMode -p ControlGroup'
log "captured (running)"

# --- C: CgroupJobIdPaths=yes, slurmd restarted under a running job ------------

SLUID=no
case $MAJOR in 2[6-9].*) SLUID=yes ;; esac
if [ "$SLUID" = yes ]; then
	echo "CgroupJobIdPaths=yes" >>"$SLURM_ETC/cgroup.conf"
	systemctl restart slurmd
	need 90 "slurmd back" sh -c "scontrol show node $NODE | grep -q 'State=[A-Z+]*' && srun -N1 -w $NODE -n1 --mem=10M -t1 true"
	J_NEW=$(submit alice physics batch sleep.sh -n1 --mem=50M -J afterrestart --export=ALL,SLEEP_S=600)
	wait_for 120 "new job" running "$J_NEW" || log "job $J_NEW not running"
	# RUNNING comes before slurmstepd has made the job's cgroup.
	wait_for 120 "new job's cgroup" sh -c "ls -d /sys/fs/cgroup/system.slice/*slurmstepd.scope/job_$J_NEW/step_batch/user/task_0" ||
		log "no job_$J_NEW directory: $(ls /sys/fs/cgroup/system.slice/*slurmstepd.scope/)"
	echo "after CgroupJobIdPaths=yes and slurmd restart: new=$J_NEW (burn=$J_BURN and hold=$J_HOLD ran across)" >>"$OUT/jobs.txt"
	layout mixed
	cap squeue-O-jobid-sluid-mixed.txt squeue -a -r -O JobID,Sluid,ArrayJobID,ArrayTaskID,State
	cap scontrol-show-job-d-mixed.txt scontrol show job -d
	cp "$SLURM_ETC/cgroup.conf" "$OUT/etc/cgroup.conf-mixed"
	log "captured (mixed layout)"
fi

# --- after: most jobs ended ---------------------------------------------------

scancel "$J_BURN" "$J_HOLD" "$J_WRITE" "$J_OOM" "$J_NET" "$J_STEPS" "$J_LIC1" "$J_LIC2" ${J_NEW:+"$J_NEW"}
wait_for 120 timeout sh -c "sacct -n -X -j $J_TIME -o State | grep -q TIMEOUT" || log "timeout job: $(sacct -n -X -j "$J_TIME" -o State)"
wait_for 300 "jobs ended" sh -c "[ -z \"\$(squeue -h -t R,CG -o %i)\" ]" || log "still running: $(squeue -h -t R,CG -o '%i %T')"
sleep 5
commands after
[ "$NATIVE" = yes ] && metrics after
cp /var/log/slurm/*.log "$OUT/" 2>/dev/null
cp /var/log/slurm/slurmrestd.log "$OUT/logs-slurmrestd.log" 2>/dev/null
log "done"
