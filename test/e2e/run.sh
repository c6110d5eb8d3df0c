#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# jobscope end-to-end test: a real single-node Slurm 22.05 (munge, MariaDB,
# slurmdbd, slurmctld, slurmd; cgroup v1), real jobs, jobscope in node and
# controller mode, a real Prometheus, and assertions against ground truth
# (cgroupfs, sacct, squeue, sinfo). Root only; installs what it needs with apt.
# Prints a table of every assertion and exits non-zero on any FAIL.
#
# Everything it starts is recorded in pid files under $WORK/run and torn down
# on exit (trap), and torn down again at the start, so a run after a crashed
# one starts clean. It never kills processes by name.
#
# Settings (environment):
#   JOBSCOPE_BIN        jobscope binary (default: bin/jobscope; `make e2e` builds it)
#   JOBSCOPE_REPORT_BIN jobscope-report binary (default: the one next to JOBSCOPE_BIN)
#   JOBSCOPE_E2E_DIR    work directory (default /tmp/jobscope-e2e)
#   JOBSCOPE_E2E_KEEP=1 leave everything running after the assertions (debugging)
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BIN=${JOBSCOPE_BIN:-$ROOT/bin/jobscope}
# `jobscope report` runs the jobscope-report next to jobscope: the report
# test installs both side by side, as the packages do.
REPORT_BIN=${JOBSCOPE_REPORT_BIN:-$(dirname "$BIN")/jobscope-report}
WORK=${JOBSCOPE_E2E_DIR:-/tmp/jobscope-e2e}
NODE=$(hostname -s)
CLUSTER=e2e
PORT_NODE=19817 PORT_CTL=19818 PORT_CAP=19819 PORT_BRK=19820 PORT_PROM=19090
# Our own bpffs directories, so the test never touches the pins of a jobscope
# installed on the machine (/sys/fs/bpf/jobscope).
BPF_PIN=/sys/fs/bpf/jobscope-e2e
BPF_PIN_CAP=/sys/fs/bpf/jobscope-e2e-cap
UNIT=$ROOT/contrib/systemd/jobscope.service
export SLURM_CONF=$WORK/etc/slurm.conf
export DEBIAN_FRONTEND=noninteractive
T0=$(date +%s)

log() { printf '[e2e %3ds] %s\n' "$(($(date +%s) - T0))" "$*" >&2; }
die() {
	log "FATAL: $*"
	exit 2
}

[ "$(id -u)" = 0 ] || die "must run as root (it installs packages and starts Slurm daemons)"
# Checks kept in their own files: test/e2e/report.sh (jobscope report),
# test/e2e/notify.sh (alerts to job owners through jobscope notify).
. "$ROOT/test/e2e/report.sh"
# shellcheck source=test/e2e/notify.sh
. "$ROOT/test/e2e/notify.sh"
# shellcheck source=test/e2e/vmetrics.sh
. "$ROOT/test/e2e/vmetrics.sh"
. "$ROOT/test/e2e/munge.sh" # the report service
[ -x "$BIN" ] || die "$BIN not found: run make build (make e2e does)"
[ -x "$REPORT_BIN" ] || die "$REPORT_BIN not found: run make build (make e2e does)"

# Assertions (row, check_*, print_table), wait_for/need and the /metrics text
# helpers (mval, mnum, mcount, mlabel, mlabels) are shared with test/vm/.
# shellcheck source=../lib/assert.sh
. "$ROOT/test/lib/assert.sh"

scrape() { curl -fsS --max-time 15 "http://127.0.0.1:$1/metrics" >"$2"; }

# --- collectors the binary offers ---------------------------------------------

HELP=$("$BIN" --help 2>&1 || true)
has_flag() { grep -qE -- "^ +--$1( |$)" <<<"$HELP"; }
has_collector() { has_flag "collector.$1"; }
# Collectors on by default in a mode, as --help says ("default on in: node mode").
mode_collectors() {
	grep -E -- '^ +--collector\.[a-z0-9_]+ ' <<<"$HELP" | grep -E "on by default in ([a-z]+, )*$1 mode" |
		sed -E 's/^ +--collector\.([a-z0-9_]+) .*/\1/'
}

# shellcheck source=test/e2e/controller.sh
. "$ROOT/test/e2e/controller.sh"
# shellcheck source=test/e2e/restd.sh
. "$ROOT/test/e2e/restd.sh"
# shellcheck source=test/e2e/levels.sh
. "$ROOT/test/e2e/levels.sh"
# shellcheck source=test/e2e/js1.sh
. "$ROOT/test/e2e/js1.sh"

# --- teardown -------------------------------------------------------------------

# kill_pidfile FILE [SECONDS]: SIGTERM the process in FILE, wait, then SIGKILL.
kill_pidfile() {
	local f=$1 wait=${2:-15} pid i
	[ -f "$f" ] || return 0
	pid=$(tr -dc 0-9 <"$f")
	if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
		kill -TERM "$pid" 2>/dev/null
		for ((i = 0; i < wait * 10; i++)); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null
	fi
	rm -f "$f"
}

# Processes still in our Slurm cgroup trees (jobs of a crashed run).
slurm_tree_pids() {
	local c
	for c in /sys/fs/cgroup/*/"slurm_$NODE"; do
		[ -d "$c" ] && find "$c" -name cgroup.procs -exec cat {} + 2>/dev/null
	done | sort -un
}

teardown() {
	local i p
	log "teardown"
	notify_teardown
	for p in jobscope-cap jobscope-full jobscope-node jobscope-ctl jobscope-ctltext jobscope-restd slurmrestd jobscope-broken prometheus victoria-metrics; do kill_pidfile "$WORK/run/$p.pid" 5; done
	# Jobs first, so the epilog runs and slurmstepd leaves before slurmd goes.
	if [ -f "$WORK/run/slurmctld.pid" ] && command -v scancel >/dev/null; then
		timeout 10 scancel --quiet --full --user=alice 2>/dev/null
		timeout 10 scancel --quiet --full --user=bob 2>/dev/null
		timeout 10 scancel --quiet --full --user=root 2>/dev/null
		id carol >/dev/null 2>&1 && timeout 10 scancel --quiet --full --user=carol 2>/dev/null
		for ((i = 0; i < 150; i++)); do
			[ -z "$(timeout 5 squeue -h -t all -o %i 2>/dev/null)" ] && [ -z "$(slurm_tree_pids)" ] && break
			sleep 0.2
		done
	fi
	kill_pidfile "$WORK/run/slurmd.pid"
	kill_pidfile "$WORK/run/slurmctld.pid"
	kill_pidfile "$WORK/run/slurmdbd.pid"
	kill_pidfile "$WORK/run/mariadbd.pid" 30
	kill_pidfile "$WORK/run/munged.pid"
	# Whatever a crash left in our job cgroups (listed by cgroup, never by name).
	for p in $(slurm_tree_pids); do kill -KILL "$p" 2>/dev/null; done
	for ((i = 0; i < 50; i++)); do
		[ -z "$(slurm_tree_pids)" ] && break
		sleep 0.1
	done
	for p in /sys/fs/cgroup/*/"slurm_$NODE"; do
		[ -d "$p" ] && find "$p" -depth -type d -exec rmdir {} + 2>/dev/null
	done
	rm -rf "$BPF_PIN" "$BPF_PIN_CAP"-* /run/slurm-fakegpu "$WORK/scratch"/* # the writer left 200 MiB
}

on_exit() {
	local rc=$?
	if [ "${JOBSCOPE_E2E_KEEP:-0}" = 1 ]; then
		log "JOBSCOPE_E2E_KEEP=1: leaving everything running (run again to clean up)"
	else
		teardown
		local left=""
		for p in /sys/fs/cgroup/*/"slurm_$NODE"; do [ -d "$p" ] && left+=" $p"; done
		[ -d "$BPF_PIN" ] && left+=" $BPF_PIN"
		[ -n "$left" ] && log "WARNING: left behind:$left"
	fi
	exit "$rc"
}

# --- install ---------------------------------------------------------------------

install_packages() {
	local pkgs=(slurmctld slurmd slurm-client slurmrestd slurmdbd mariadb-server munge prometheus victoria-metrics curl jq) missing=() p
	for p in "${pkgs[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
	[ ${#missing[@]} -eq 0 ] && return 0
	log "apt-get install ${missing[*]}"
	apt-get update -qq >"$WORK/log/apt.log" 2>&1 || die "apt-get update failed (see $WORK/log/apt.log)"
	apt-get install -y -qq --no-install-recommends "${missing[@]}" >>"$WORK/log/apt.log" 2>&1 ||
		die "apt-get install failed (see $WORK/log/apt.log)"
}

# --- configuration --------------------------------------------------------------------

write_configs() {
	local topo
	# The node line must match what slurmd sees, or the node registers INVALID.
	topo=$(slurmd -C | head -1 | tr ' ' '\n' | grep -E '^(CPUs|Boards|SocketsPerBoard|CoresPerSocket|ThreadsPerCore|RealMemory)=' | paste -sd' ' -)
	[ -n "$topo" ] || die "slurmd -C gave no topology"
	cat >"$WORK/etc/slurm.conf" <<EOF
ClusterName=$CLUSTER
SlurmctldHost=$NODE(127.0.0.1)
SlurmUser=slurm
AuthType=auth/munge
CredType=cred/munge
StateSaveLocation=$WORK/spool/ctld
SlurmdSpoolDir=$WORK/spool/d
SlurmctldPidFile=$WORK/run/slurmctld.pid
SlurmdPidFile=$WORK/run/slurmd.pid
SlurmctldLogFile=$WORK/log/slurmctld.log
SlurmdLogFile=$WORK/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/cgroup
TaskPlugin=task/cgroup,task/affinity
JobAcctGatherType=jobacct_gather/cgroup
JobAcctGatherFrequency=task=5
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=localhost
AccountingStorageEnforce=associations
AccountingStorageTRES=gres/gpu
JobCompType=jobcomp/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
SchedulerType=sched/backfill
SchedulerParameters=sched_interval=2
PriorityType=priority/multifactor
MailProg=/bin/true
Prolog=$WORK/etc/prolog.sh
Epilog=$WORK/etc/epilog.sh
PrologFlags=Contain
MpiDefault=none
ReturnToService=2
MinJobAge=300
KillWait=2
SlurmctldTimeout=30
SlurmdTimeout=60
GresTypes=gpu
NodeName=$NODE NodeAddr=127.0.0.1 $topo Gres=gpu:2 State=UNKNOWN
# Six jobs on a 2-CPU machine: cores are shared (FORCE), each job still gets
# its own cpuset core and memory limit.
PartitionName=debug Nodes=$NODE Default=YES MaxTime=30 State=UP OverSubscribe=FORCE:8
PartitionName=batch Nodes=$NODE MaxTime=30 State=UP OverSubscribe=FORCE:8
EOF
	cat >"$WORK/etc/cgroup.conf" <<EOF
CgroupPlugin=autodetect
CgroupMountpoint=/sys/fs/cgroup
ConstrainCores=yes
ConstrainRAMSpace=yes
ConstrainSwapSpace=no
ConstrainDevices=yes
EOF
	echo "NodeName=$NODE Name=gpu File=/run/slurm-fakegpu/gpu[0-1]" >"$WORK/etc/gres.conf"
	cat >"$WORK/etc/slurmdbd.conf" <<EOF
AuthType=auth/munge
DbdHost=localhost
DbdPort=6819
SlurmUser=slurm
DebugLevel=info
LogFile=$WORK/log/slurmdbd.log
PidFile=$WORK/run/slurmdbd.pid
StorageType=accounting_storage/mysql
StorageHost=localhost
StorageUser=slurm
StoragePass=jobscope-e2e
StorageLoc=slurm_acct_db
EOF
	chown slurm "$WORK/etc/slurmdbd.conf"
	chmod 600 "$WORK/etc/slurmdbd.conf"
	# slurmd runs the prolog with only Slurm's variables: the wrappers name
	# our directories and run the shipped scripts.
	cat >"$WORK/etc/prolog.sh" <<EOF
#!/bin/sh
JOBSCOPE_JOB_PROPS_DIR=$WORK/props $ROOT/contrib/slurm/prolog.sh
if [ -x $ROOT/contrib/slurm/prolog.d/jobscope-gpu-mapping.sh ]; then
	JOBSCOPE_GPU_MAPPING_DIR=$WORK/gpu-jobs $ROOT/contrib/slurm/prolog.d/jobscope-gpu-mapping.sh
fi
exit 0
EOF
	cat >"$WORK/etc/epilog.sh" <<EOF
#!/bin/sh
JOBSCOPE_JOB_PROPS_DIR=$WORK/props $ROOT/contrib/slurm/epilog.sh
if [ -x $ROOT/contrib/slurm/epilog.d/jobscope-gpu-mapping.sh ]; then
	JOBSCOPE_GPU_MAPPING_DIR=$WORK/gpu-jobs $ROOT/contrib/slurm/epilog.d/jobscope-gpu-mapping.sh
fi
JOBSCOPE_REPORT_EPILOG_CONF=$WORK/etc/report-epilog.conf $ROOT/contrib/slurm/epilog.d/jobscope-report.sh
exit 0
EOF
	chmod 755 "$WORK/etc/prolog.sh" "$WORK/etc/epilog.sh"
}

# --- daemons ---------------------------------------------------------------------------

start_slurm() {
	local i
	install -d -o munge -g munge -m 0755 /run/munge
	install -d -o mysql -g mysql -m 0755 /run/mysqld
	[ -s /etc/munge/munge.key ] || {
		dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 status=none
		chown munge:munge /etc/munge/munge.key
		chmod 400 /etc/munge/munge.key
	}
	# munge and MariaDB may already serve the machine: use them, stop nothing
	# we did not start.
	if ! munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then
		runuser -u munge -- /usr/sbin/munged --force || die "munged did not start"
		need 10 munge sh -c 'munge -n | unmunge'
		cp /run/munge/munged.pid "$WORK/run/munged.pid"
	fi
	if ! mariadb-admin ping >/dev/null 2>&1; then
		setsid /usr/sbin/mariadbd --user=mysql --bind-address=127.0.0.1 \
			--pid-file=/run/mysqld/mariadbd-e2e.pid >"$WORK/log/mariadb.log" 2>&1 </dev/null &
		echo $! >"$WORK/run/mariadbd.pid"
		need 30 mariadb mariadb-admin ping
	fi
	mariadb -e "DROP DATABASE IF EXISTS slurm_acct_db;
		CREATE USER IF NOT EXISTS 'slurm'@'localhost' IDENTIFIED BY 'jobscope-e2e';
		ALTER USER 'slurm'@'localhost' IDENTIFIED BY 'jobscope-e2e';
		GRANT ALL ON slurm_acct_db.* TO 'slurm'@'localhost';" || die "MariaDB setup failed"

	/usr/sbin/slurmdbd || die "slurmdbd did not start (see $WORK/log/slurmdbd.log)"
	need 30 slurmdbd sacctmgr -n show cluster
	sacctmgr -i add cluster "$CLUSTER" >/dev/null || die "sacctmgr add cluster failed"
	/usr/sbin/slurmctld || die "slurmctld did not start (see $WORK/log/slurmctld.log)"
	need 30 slurmctld sh -c 'scontrol ping | grep -q UP'

	# Fake GPUs: character devices with NVIDIA's major number, so the devices
	# cgroup can allow one and deny the other (never /dev/null's 1:3).
	install -d -m 0755 /run/slurm-fakegpu
	for i in 0 1; do [ -e /run/slurm-fakegpu/gpu$i ] || mknod -m 0666 /run/slurm-fakegpu/gpu$i c 195 $i; done

	/usr/sbin/slurmd || die "slurmd did not start (see $WORK/log/slurmd.log)"
	need 30 "node $NODE idle" sh -c "sinfo -h -n $NODE -o %T | grep -qx idle"
	# After a restart sinfo may say idle from saved state: a real job proves it.
	need 60 "a first job" timeout 20 srun -N1 -n1 --mem=10M -t1 true
}

setup_users() {
	local u
	for u in alice bob; do id "$u" >/dev/null 2>&1 || useradd -m -s /bin/sh "$u"; done
	sacctmgr -i add account physics,chemistry cluster="$CLUSTER" >/dev/null || die "add account"
	sacctmgr -i add user alice account=physics,chemistry defaultaccount=physics >/dev/null || die "add alice"
	sacctmgr -i add user bob account=chemistry defaultaccount=chemistry >/dev/null || die "add bob"
	need 30 "associations in slurmctld" sh -c 'scontrol show assoc_mgr users=bob flags=assoc | grep -q "Account=chemistry"'
}

# submit USER ACCOUNT PARTITION SCRIPT SBATCH-ARGS...: prints the job id.
submit() {
	local user=$1 acct=$2 part=$3 script=$4
	shift 4
	runuser -u "$user" -- env SLURM_CONF="$SLURM_CONF" sbatch --parsable -A "$acct" -p "$part" -t 10 \
		--chdir="$WORK/jobs" -o "$WORK/out/%j.out" "$@" "$WORK/jobs/$script" | cut -d';' -f1
}

write_jobs() {
	# CPU burner: one srun step burns 12 s of CPU (its own user time, not
	# wall time: on a loaded 2-core machine 15 s of wall time once gave it
	# under 10 s of CPU), then the batch step idles, so the job's CPU time
	# stops moving and can be compared. 120 s of wall time bound it.
	cat >"$WORK/jobs/burn.sh" <<'EOF'
#!/bin/sh
srun -n1 sh -c 'timeout 120 perl -e "1 while (times)[0] < 12"; exit 0'
echo burned
exec sleep 600
EOF
	# Memory holder: 400 MiB really touched (perl's vec zero-fills).
	cat >"$WORK/jobs/hold.sh" <<'EOF'
#!/bin/sh
exec perl -e '$x = ""; vec($x, 400*1024*1024 - 1, 8) = 1; print "holding\n"; $| = 1; sleep 600'
EOF
	cat >"$WORK/jobs/write.sh" <<EOF
#!/bin/sh
dd if=/dev/zero of=$WORK/scratch/\$SLURM_JOB_ID.dat bs=1M count=200 conv=fsync status=none
echo written
exec sleep 600
EOF
	# OOM: 300 MiB under --mem=100M; the batch step survives the kill.
	cat >"$WORK/jobs/oom.sh" <<'EOF'
#!/bin/sh
perl -e '$x = ""; vec($x, 300*1024*1024 - 1, 8) = 1'
echo "oom rc=$?"
exec sleep 600
EOF
	cat >"$WORK/jobs/sleep.sh" <<'EOF'
#!/bin/sh
exec sleep 600
EOF
	chmod 755 "$WORK"/jobs/*.sh
}

# --- jobscope and Prometheus ---------------------------------------------------------------

flag_if() { has_flag "${1%%=*}" && printf '%s\n' "--$1"; }

start_jobscope() {
	local args=() c p
	# Everything of ours is stopped by now: an answer here is someone else's.
	for p in $PORT_NODE $PORT_CTL $PORT_CAP $PORT_BRK $PORT_FULL $PORT_PROM; do
		curl -s -o /dev/null --max-time 2 "http://127.0.0.1:$p/" && die "port $p on 127.0.0.1 is taken by another program"
	done
	for c in $(mode_collectors node); do args+=("--collector.$c"); done
	mapfile -t -O "${#args[@]}" args < <(
		flag_if "bpf.pin-path=$BPF_PIN"
		flag_if "gpu.job-mapping-dir=$WORK/gpu-jobs"
	)
	log "jobscope node: ${args[*]}"
	setsid "$BIN" --web.listen-address=127.0.0.1:$PORT_NODE --slurm.job-props-dir="$WORK/props" \
		"${args[@]}" >"$WORK/log/jobscope-node.log" 2>&1 </dev/null &
	echo $! >"$WORK/run/jobscope-node.pid"
	need 60 "jobscope node /metrics" curl -fsS -o /dev/null "http://127.0.0.1:$PORT_NODE/metrics"

	CTL_COLLECTORS=$(mode_collectors controller | paste -sd' ' -)
	if [ -n "$CTL_COLLECTORS" ]; then
		args=()
		has_collector slurm_sacct && args+=(--collector.slurm_sacct --collector.slurm_sacct.since=1h)
		has_flag slurm.poll-interval && args+=(--slurm.poll-interval=1s)
		# The license pool and the reservation are made at run time:
		# fairshare, licenses and reservations polled as often as jobs.
		has_flag slurm.slow-poll-interval && args+=(--slurm.slow-poll-interval=1s)
		log "jobscope controller: ${args[*]}"
		setsid "$BIN" --mode=controller --web.listen-address=127.0.0.1:$PORT_CTL "${args[@]}" \
			>"$WORK/log/jobscope-ctl.log" 2>&1 </dev/null &
		echo $! >"$WORK/run/jobscope-ctl.pid"
		need 30 "jobscope controller /metrics" curl -fsS -o /dev/null "http://127.0.0.1:$PORT_CTL/metrics"
		ctl_text_start
		restd_start
	fi
	has_flag slurm.node-metadata.squeue && start_broken
}

# start_broken: discovery broken on purpose. A v2 tree whose slurmstepd
# scope holds one job-shaped directory (it has a step) of a naming scheme
# jobscope does not know, like a future Slurm might write: the instance
# must say so (log line, counter) and the alert must fire.
start_broken() {
	local scope=$WORK/broken/cgroup/system.slice/${NODE}_slurmstepd.scope
	install -d "$scope/jobq17/step_0/user/task_0" "$scope/system" "$WORK/broken/proc" "$WORK/broken/props"
	echo "cpuset cpu memory" >"$WORK/broken/cgroup/cgroup.controllers"
	: >"$scope/jobq17/step_0/user/task_0/cgroup.procs"
	setsid "$BIN" --web.listen-address=127.0.0.1:$PORT_BRK --path.cgroupfs="$WORK/broken/cgroup" \
		--path.procfs="$WORK/broken/proc" --slurm.job-props-dir="$WORK/broken/props" --slurm.node-metadata.squeue=false \
		--collector.ebpf=false --collector.gpu=false --collector.power=false \
		>"$WORK/log/jobscope-broken.log" 2>&1 </dev/null &
	echo $! >"$WORK/run/jobscope-broken.pid"
	need 30 "jobscope broken-discovery /metrics" curl -fsS -o /dev/null "http://127.0.0.1:$PORT_BRK/metrics"
}

start_prometheus() {
	local rules="" f
	# The shipped rules, but JobscopeJobsNotDiscovered waits 2 s instead of
	# 10 min before it fires: the test checks its expression, not its patience.
	install -d "$WORK/etc/rules"
	for f in "$ROOT"/contrib/prometheus/*rules*.yml; do
		[ -f "$f" ] || continue
		awk '/alert: JobscopeJobsNotDiscovered/{hit=1} hit && /^ *for:/{sub(/for: .*/, "for: 2s"); hit=0} {print}' \
			"$f" >"$WORK/etc/rules/${f##*/}"
		rules+="  - $WORK/etc/rules/${f##*/}"$'\n'
	done
	cat >"$WORK/etc/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
rule_files:
$rules
scrape_configs:
  - job_name: jobscope
    static_configs:
      - targets: ['127.0.0.1:$PORT_NODE']
  - job_name: jobscope-controller
    static_configs:
      - targets: ['127.0.0.1:$PORT_CTL']
  - job_name: e2e-broken-discovery
    static_configs:
      - targets: ['127.0.0.1:$PORT_BRK']
EOF
	[ -n "$rules" ] || sed -i '/^rule_files:$/d' "$WORK/etc/prometheus.yml"
	setsid prometheus --config.file="$WORK/etc/prometheus.yml" --storage.tsdb.path="$WORK/prom" \
		--web.listen-address=127.0.0.1:$PORT_PROM --web.enable-admin-api >"$WORK/log/prometheus.log" 2>&1 </dev/null &
	echo $! >"$WORK/run/prometheus.pid"
	need 30 prometheus curl -fsS -o /dev/null "http://127.0.0.1:$PORT_PROM/-/ready"
}

# promq QUERY: the JSON answer of an instant query.
promq() {
	curl -fsS --max-time 10 "http://127.0.0.1:$PORT_PROM/api/v1/query" --data-urlencode "query=$1"
}

# --- ground truth ---------------------------------------------------------------------------------

# cg CONTROLLER JOBID FILE: a job-level cgroup v1 file.
cg() {
	local uid
	uid=$(squeue -h -j "$2" -o %U 2>/dev/null)
	cat "/sys/fs/cgroup/$1/slurm_$NODE/uid_$uid/job_$2/$3" 2>/dev/null
}
# oom_kills JOBID: oom_kill summed over the job's memory cgroups (v1 counts an
# OOM kill only in the cgroup whose limit was hit, often the step's).
oom_kills() {
	local uid
	uid=$(squeue -h -j "$1" -o %U 2>/dev/null)
	find "/sys/fs/cgroup/memory/slurm_$NODE/uid_$uid/job_$1" -name memory.oom_control \
		-exec awk '$1=="oom_kill"{s+=$2} END{print s+0}' {} + 2>/dev/null | awk '{s+=$1} END{print s+0}'
}
oom_where() {
	local uid d
	uid=$(squeue -h -j "$1" -o %U 2>/dev/null)
	d=/sys/fs/cgroup/memory/slurm_$NODE/uid_$uid/job_$1
	find "$d" -name memory.oom_control 2>/dev/null | while read -r f; do
		printf '%s=%s ' "$(dirname "${f#"$d"}" | sed 's|^/||; s|^$|job|')" "$(awk '$1=="oom_kill"{print $2}' "$f")"
	done
}
# sacct_cpu JOBSTEP: TotalCPU of a step in seconds.
sacct_cpu() {
	sacct -n -P -j "$1" -o TotalCPU 2>/dev/null | head -1 | awk -F'[-:]' '
		{ n=NF; s=$n; if(n>=2) s+=$(n-1)*60; if(n>=3) s+=$(n-2)*3600; if(n>=4) s+=$(n-3)*86400; printf "%.3f\n", s }'
}
job_state() { squeue -h -j "$1" -o %T 2>/dev/null; }
out_has() { grep -q "$2" "$WORK/out/$1.out" 2>/dev/null; }

# --- main ---------------------------------------------------------------------------------------------

mkdir -p "$WORK"
trap on_exit EXIT
trap 'exit 130' INT TERM
log "work dir $WORK, node $NODE, jobscope $("$BIN" --version 2>&1 | head -1)"
teardown
# Everything an earlier run left: a stale binary or VictoriaMetrics' old
# samples (job ids repeat from run to run) would answer for this run.
rm -rf "$WORK"/{etc,spool,log,props,noprops,gpu-jobs,jobs,out,scratch,prom,metrics,broken,report,carol,vm,munge2,bin,notify} "$WORK"/jobscope-*
install -d -m 0755 "$WORK" "$WORK/etc" "$WORK/jobs" "$WORK/metrics" "$WORK/spool" "$WORK/log"
install_packages # creates the slurm, munge and mysql users the directories below need
install -d -m 0755 -o slurm -g slurm "$WORK/run" "$WORK/log" "$WORK/spool/ctld"
install -d -m 0755 "$WORK/spool/d" "$WORK/props" "$WORK/gpu-jobs"
install -d -m 1777 "$WORK/out" "$WORK/scratch"
write_configs
start_slurm
log "slurm up"
setup_users
write_jobs
start_jobscope
start_prometheus
vmetrics_setup # VictoriaMetrics gets Prometheus's samples by remote_write
log "jobscope and prometheus up"

J_BURN=$(submit alice physics debug burn.sh -n1 -c1 --mem=200M -J burner)
J_HOLD=$(submit bob chemistry batch hold.sh -n1 --mem=600M -J holder)
J_WRITE=$(submit alice chemistry debug write.sh -n1 --mem=300M -J writer)
J_OOM=$(submit bob chemistry batch oom.sh -n1 --mem=100M -J oomer)
J_GPU=$(submit bob chemistry debug sleep.sh -n1 --mem=100M --gres=gpu:1 -J gpujob)
J_HELD=$(submit alice physics debug sleep.sh -n1 --mem=100M --hold -J held)
for j in J_BURN J_HOLD J_WRITE J_OOM J_GPU J_HELD; do [[ ${!j} =~ ^[0-9]+$ ]] || die "sbatch for $j failed: '${!j}'"; done
log "jobs: burn=$J_BURN hold=$J_HOLD write=$J_WRITE oom=$J_OOM gpu=$J_GPU held=$J_HELD"
RUNNING="$J_BURN $J_HOLD $J_WRITE $J_OOM $J_GPU"
all_running() {
	local j
	for j in $RUNNING; do [ "$(job_state "$j")" = RUNNING ] || return 1; done
}
need 60 "jobs running" all_running
need 30 "memory holder" out_has "$J_HOLD" holding
need 60 "writer" out_has "$J_WRITE" written
need 30 "OOM job" out_has "$J_OOM" "oom rc="
need 150 "burner step done" sh -c "sacct -n -P -j $J_BURN.0 -o State | grep -qx COMPLETED"
log "jobs in place"
sleep 2 # a controller poll (1 s) and a Prometheus scrape (1 s) past the last change

# --- node mode -----------------------------------------------------------------------------------------

M=$WORK/metrics/node.txt
# Ground truth read around the scrape; values that keep moving are bracketed.
MEM_BEFORE=$(cg memory "$J_HOLD" memory.usage_in_bytes)
CPU_NS=$(cg cpuacct "$J_BURN" cpuacct.usage)
PERCPU=$(cg cpuacct "$J_BURN" cpuacct.usage_percpu)
CPUSET=$(cg cpuset "$J_BURN" cpuset.cpus)
OOM_TRUTH=$(oom_kills "$J_OOM")
OOM_WHERE=$(oom_where "$J_OOM")
scrape $PORT_NODE "$M" || die "scrape of the node instance failed"
MEM_AFTER=$(cg memory "$J_HOLD" memory.usage_in_bytes)

check_eq "node: jobscope_jobs == running jobs" 5 "$(mnum "$M" jobscope_jobs)"
declare -A WANT=(
	[$J_BURN]="alice physics debug 200"
	[$J_HOLD]="bob chemistry batch 600"
	[$J_WRITE]="alice chemistry debug 300"
	[$J_OOM]="bob chemistry batch 100"
	[$J_GPU]="bob chemistry debug 100"
)
for j in $J_BURN $J_HOLD $J_WRITE $J_OOM $J_GPU; do
	read -r u a p mem <<<"${WANT[$j]}"
	got="$(mlabel "$M" slurm_job_info "jobid=\"$j\"" user)/$(mlabel "$M" slurm_job_info "jobid=\"$j\"" account)/$(mlabel "$M" slurm_job_info "jobid=\"$j\"" partition)"
	check_eq "job $j: slurm_job_info user/account/partition" "$u/$a/$p" "$got"
	src=$(mlabel "$M" slurm_job_info "jobid=\"$j\"" metadata_source)
	check_eq "job $j: metadata_source starts with props (prolog)" props "${src%%+*}"
	key=$(mlabel "$M" slurm_job_info "jobid=\"$j\"" job_key)
	if [[ $key =~ ^$CLUSTER/$j/[0-9]+$ ]]; then row "job $j: job_key cluster/id/start ($src)" "$CLUSTER/$j/<start>" "$key" PASS; else row "job $j: job_key cluster/id/start ($src)" "$CLUSTER/$j/<start>" "$key" FAIL; fi
	check_eq "job $j: memory limit == --mem=${mem}M" "$((mem * 1048576))" \
		"$(mval "$M" slurm_job_memory_limit_bytes "jobid=\"$j\"" | awk '{printf "%.0f", $1}')"
done
check_eq "held job $J_HELD: not on the node" 0 "$(mcount "$M" slurm_job_info "jobid=\"$J_HELD\"")"
if has_flag slurm.node-metadata.squeue; then
	check_eq "discovery: job directories (job_id scheme) == running jobs" 5 "$(mnum "$M" jobscope_discovery_job_directories 'scheme="job_id"')"
	check_eq "discovery: nothing skipped" 0 "$(mnum "$M" jobscope_discovery_skipped_total)"
	SQ_RUNS=$(mnum "$M" jobscope_discovery_squeue_runs_total)
	log "node: background squeue runs $SQ_RUNS, up $(mnum "$M" jobscope_discovery_squeue_up)"
	[ "$SQ_RUNS" != absent ] && [ "$SQ_RUNS" != 0 ] && check_eq "discovery: background squeue works (--nodelist=$NODE)" 1 "$(mnum "$M" jobscope_discovery_squeue_up)"
fi
check_eq "node: no (null) label value" 0 "$(grep -c '="(null)"' "$M")"

# CPU: the burner's steps have ended, so its counters stand still.
CPU_TRUTH=$(awk -v n="$CPU_NS" 'BEGIN{printf "%.3f", n/1e9}')
CPU_GOT=$(mval "$M" slurm_job_cpu_usage_seconds_total "jobid=\"$J_BURN\"")
check_close "burner: cpu_usage_seconds == cpuacct.usage" "$CPU_TRUTH" "$CPU_GOT" 0.01 0.05
SACCT_CPU=$(sacct_cpu "$J_BURN.0")
check_close "burner: cpu_usage_seconds ~ sacct step 0 TotalCPU" "$SACCT_CPU" "$CPU_GOT" 0.05 0.5
check_ge "burner: step 0 burned (sacct TotalCPU s)" 10 "$SACCT_CPU"
MODE_SUM=$(mval "$M" slurm_job_cpu_seconds_total "jobid=\"$J_BURN\"")
check_close "burner: user+system seconds ~ cpuacct.usage" "$CPU_TRUTH" "$MODE_SUM" 0.05 0.2
# Per core: only the job's cpuset core, with that core's cpuacct.usage_percpu.
check_eq "burner: per-core series on allocated cores only" "$CPUSET" \
	"$(mlabels "$M" slurm_job_cpu_core_seconds_total "jobid=\"$J_BURN\"" core)"
CORE_TRUTH=$(awk -v c="$CPUSET" '{printf "%.3f", $(c+1)/1e9}' <<<"$PERCPU")
check_close "burner: core $CPUSET seconds == usage_percpu[$CPUSET]" "$CORE_TRUTH" \
	"$(mval "$M" slurm_job_cpu_core_seconds_total "jobid=\"$J_BURN\"" "core=\"$CPUSET\"")" 0.01 0.05
check_eq "burner: cpus == 1 (cpuset)" 1 "$(mnum "$M" slurm_job_cpus "jobid=\"$J_BURN\"")"

# Memory
MEM_GOT=$(mval "$M" slurm_job_memory_usage_bytes "jobid=\"$J_HOLD\"")
MEM_MID=$(((MEM_BEFORE + MEM_AFTER) / 2))
check_close "holder: memory usage == memory.usage_in_bytes" "$MEM_MID" "$MEM_GOT" 0.02
check_ge "holder: memory usage >= 400 MiB held" 419430400 "$MEM_GOT"
check_ge "holder: memory peak >= 400 MiB" 419430400 "$(mval "$M" slurm_job_memory_peak_bytes "jobid=\"$J_HOLD\"")"

# OOM
check_ge "oomer: kernel counted an OOM kill (cgroup tree)" 1 "$OOM_TRUTH"
log "oomer: oom_kill by cgroup: $OOM_WHERE"
check_eq "oomer: memory_events{oom_kill} == kernel's count" "$OOM_TRUTH" \
	"$(mnum "$M" slurm_job_memory_events_total "jobid=\"$J_OOM\"" 'event="oom_kill"')"

# Written bytes: from whichever IO metric this build has.
WRITTEN=209715200
io_metric=""
for cand in slurm_job_io_storage_bytes_total slurm_job_process_storage_io_bytes_total slurm_job_block_io_bytes_total; do
	if [ "$(mcount "$M" "$cand" "jobid=\"$J_WRITE\"" 'direction="write"')" -gt 0 ]; then
		io_metric=$cand
		break
	fi
done
if [ -n "$io_metric" ]; then
	check_ge "writer: $io_metric{write} >= dd's 200 MiB" $WRITTEN \
		"$(mval "$M" "$io_metric" "jobid=\"$J_WRITE\"" 'direction="write"')"
else
	skip "writer: written bytes" "no IO metric with direction=write for the job in this build"
fi
if [ "$(mcount "$M" slurm_job_io_syscall_bytes_total "jobid=\"$J_WRITE\"")" -gt 0 ]; then
	check_ge "writer: io_syscall_bytes{write} >= 200 MiB" $WRITTEN \
		"$(mval "$M" slurm_job_io_syscall_bytes_total "jobid=\"$J_WRITE\"" 'direction="write"')"
fi

# Collectors that exist in this build and must work here.
if has_collector ebpf; then
	check_eq "ebpf collector success" 1 "$(mnum "$M" jobscope_scrape_collector_success 'collector="ebpf"')"
	check_ge "ebpf: programs attached" 1 "$(mval "$M" jobscope_bpf_programs_attached)"
	[ -d "$BPF_PIN" ] && check_ge "ebpf: maps pinned under $BPF_PIN" 1 "$(find "$BPF_PIN" -mindepth 1 | wc -l)"
else
	skip "ebpf collector" "not in this build's --help"
fi
if has_collector process; then
	check_eq "process collector success" 1 "$(mnum "$M" jobscope_scrape_collector_success 'collector="process"')"
	check_ge "holder: slurm_job_processes >= 1" 1 "$(mval "$M" slurm_job_processes "jobid=\"$J_HOLD\"")"
else
	skip "process collector" "not in this build's --help"
fi
check_eq "cgroup collector success" 1 "$(mnum "$M" jobscope_scrape_collector_success 'collector="cgroup"')"
check_eq "gpu job: SLURM_JOB_GPUS in props file" 1 "$(grep -c '^SLURM_JOB_GPUS=[0-9]' "$WORK/props/$J_GPU" 2>/dev/null)"
if [ -x "$ROOT/contrib/slurm/prolog.d/jobscope-gpu-mapping.sh" ]; then
	check_eq "gpu job: prolog GPU mapping file names the job" "$J_GPU" "$(cat "$WORK"/gpu-jobs/[0-9]* 2>/dev/null | sort -u | paste -sd, -)"
fi
check_eq "promtool check metrics (node)" "" "$(promtool check metrics <"$M" 2>&1 | head -3 | tr '\n' ' ')"
levels_e2e $J_BURN $J_HOLD $J_WRITE $J_OOM $J_GPU

# --- controller mode ---------------------------------------------------------------------------------------

if [ -n "${CTL_COLLECTORS:-}" ]; then
	C=$WORK/metrics/controller.txt
	SQ=$(squeue_states)
	SI=$(sinfo_states)
	scrape $PORT_CTL "$C" || die "scrape of the controller instance failed"
	check_eq "controller: slurm_queue_jobs by state == squeue" "$SQ" "$(mby "$C" slurm_queue_jobs state)"
	check_eq "controller: pending reason JobHeldUser" 1 "$(mnum "$C" slurm_queue_jobs_pending 'reason="JobHeldUser"')"
	check_eq "controller: slurm_cluster_nodes by state == sinfo" "$SI" "$(mby "$C" slurm_cluster_nodes state)"
	check_eq "controller: no (null) label value" 0 "$(grep -c '="(null)"' "$C")"
	check_eq "controller: jobscope_slurm_up all 1" "" "$(grep -E '^jobscope_slurm_up\{' "$C" | awk '$NF!=1' | head -3 | tr '\n' ' ')"
	check_eq "promtool check metrics (controller)" "" "$(promtool check metrics <"$C" 2>&1 | head -3 | tr '\n' ' ')"
	ctl_depth
	check_eq "promtool check metrics (controller, text form)" "" "$(promtool check metrics <"$WORK/metrics/ctl-text.txt" 2>&1 | head -3 | tr '\n' ' ')"
else
	skip "controller mode" "no controller-mode collectors in this build's --help"
fi

# --- Prometheus ------------------------------------------------------------------------------------------------

prom_job_user() { promq "slurm_job_info{jobid=\"$J_BURN\"}" | jq -r '.data.result[0].metric.user // empty'; }
wait_for 20 "prometheus has the job" sh -c "[ -n \"\$(curl -fsS 'http://127.0.0.1:$PORT_PROM/api/v1/query' --data-urlencode 'query=slurm_job_info{jobid=\"$J_BURN\"}' | jq -r '.data.result[0].metric.user // empty')\" ]"
check_eq "prometheus: PromQL slurm_job_info{jobid=$J_BURN} user" alice "$(prom_job_user)"
check_eq "prometheus: jobscope targets up" "1,1" \
	"$(promq 'up{job=~"jobscope.*"}' | jq -r '[.data.result[].value[1]] | sort | join(",")')"
Q="rate(slurm_job_cpu_usage_seconds_total{jobid=\"$J_HOLD\"}[5s])"
check_eq "prometheus: rate() over the holder's CPU series" 1 "$(promq "$Q" | jq -r '.data.result | length')"
if [ -n "${CTL_COLLECTORS:-}" ]; then
	check_eq "prometheus: sum(slurm_queue_jobs) == squeue" "$(squeue -h | wc -l)" \
		"$(promq 'sum(slurm_queue_jobs)' | jq -r '.data.result[0].value[1] // "absent"')"
fi
if grep -q '^rule_files:' "$WORK/etc/prometheus.yml"; then
	RULES_URL=http://127.0.0.1:$PORT_PROM/api/v1/rules
	wait_for 15 "rules evaluated" sh -c "curl -fsS $RULES_URL | jq -e '[.data.groups[].rules[] | select(.health != \"ok\")] | length == 0'"
	check_eq "prometheus: contrib rules all evaluated ok" "" \
		"$(curl -fsS "$RULES_URL" | jq -r '[.data.groups[].rules[] | select(.health != "ok") | "\(.name):\(.health)"] | join(",")')"
	check_ge "prometheus: contrib rules loaded" 4 "$(curl -fsS "$RULES_URL" | jq -r '[.data.groups[].rules[]] | length')"
	Q="job:slurm_job_memory_working_set:ratio{jobid=\"$J_HOLD\"}"
	wait_for 15 "recording rule" sh -c "curl -fsS http://127.0.0.1:$PORT_PROM/api/v1/query --data-urlencode 'query=$Q' | jq -e '.data.result | length == 1'"
	check_close "prometheus: recording rule $Q" "$(awk -v m="$MEM_GOT" 'BEGIN{printf "%.3f", m/629145600}')" \
		"$(promq "$Q" | jq -r '.data.result[0].value[1] // "absent"')" 0.05
	if [ -f "$WORK/etc/rules/jobscope-summary-rules.yml" ]; then
		Q="job:slurm_job_cpu_core_busy:max_rate5m{jobid=\"$J_BURN\"}"
		wait_for 15 "summary rule" sh -c "curl -fsS http://127.0.0.1:$PORT_PROM/api/v1/query --data-urlencode 'query=$Q' | jq -e '.data.result | length == 1'"
		check_eq "prometheus: summary rule folds the burner's cores into one series" 1 "$(promq "$Q" | jq -r '.data.result | length')"
	fi
fi

# --- discovery broken on purpose ------------------------------------------------------------------------------

if [ -f "$WORK/run/jobscope-broken.pid" ]; then
	B=$WORK/metrics/broken.txt
	scrape $PORT_BRK "$B" || die "scrape of the broken-discovery instance failed"
	check_eq "broken discovery: jobscope_jobs" 0 "$(mnum "$B" jobscope_jobs)"
	check_eq "broken discovery: job directories of unknown scheme" 1 "$(mnum "$B" jobscope_discovery_job_directories 'scheme="unknown"')"
	check_ge "broken discovery: jobscope_discovery_skipped_total{unknown_scheme}" 1 "$(mnum "$B" jobscope_discovery_skipped_total 'reason="unknown_scheme"')"
	check_eq "broken discovery: one log line with reason and path" 1 \
		"$(grep 'job directory skipped' "$WORK/log/jobscope-broken.log" | grep -c 'reason=unknown_scheme.*jobq17')"
	check_eq "broken discovery: start-up line counts it" 1 "$(grep -c 'job discovery: layout found.*job_dirs_unknown=1' "$WORK/log/jobscope-broken.log")"
	firing() { # JOB: instances for which JobscopeJobsNotDiscovered fires
		curl -fsS "http://127.0.0.1:$PORT_PROM/api/v1/alerts" |
			jq -r --arg j "$1" '[.data.alerts[] | select(.labels.alertname == "JobscopeJobsNotDiscovered" and .labels.job == $j and .state == "firing") | .labels.instance] | join(",")'
	}
	wait_for 30 "alert JobscopeJobsNotDiscovered" sh -c "curl -fsS http://127.0.0.1:$PORT_PROM/api/v1/alerts | jq -e '[.data.alerts[] | select(.labels.alertname == \"JobscopeJobsNotDiscovered\" and .state == \"firing\")] | length > 0'"
	check_eq "prometheus: alert JobscopeJobsNotDiscovered fires for the broken node" "127.0.0.1:$PORT_BRK" "$(firing e2e-broken-discovery)"
	check_eq "prometheus: alert JobscopeJobsNotDiscovered quiet for the real node" "" "$(firing jobscope)"
else
	skip "broken discovery" "no --slurm.node-metadata.squeue in this build"
fi

# unit_caps KEY: the unit's capability list as setpriv wants it (+bpf,+perfmon,
# ...: libcap-ng's names, without the cap_ prefix).
unit_caps() {
	sed -n "s/^$1=//p" "$UNIT" | tr ' ' '\n' | grep . | tr 'A-Z' 'a-z' | sed -e 's/^cap_//' -e 's/^/+/' | paste -sd, -
}
cap_names() { # +bpf,... -> cap_bpf,... sorted, as capsh --decode prints them
	tr -d '+' <<<"$1" | tr , '\n' | grep . | sed 's/^/cap_/' | sort | paste -sd, -
}

# --- least privilege: the systemd unit's capability set, as nobody ---------------------------------------------

# cap_run NAME CAPS BOUND: start jobscope as nobody with these capabilities
# (setpriv syntax), its own bpffs pin dir and no props dir and no scontrol, so
# job metadata must come from /proc/<pid>/environ; scrape it into
# $WORK/metrics/NAME.txt. Returns non-zero if /metrics never answered.
cap_run() {
	local name=$1 caps=$2 bound=$3 pin="$BPF_PIN_CAP-$1" args=() c rc=0
	install -d -o nobody -g nogroup -m 0700 "$pin" # the unit's ExecStartPre does this
	install -d -m 0755 "$WORK/noprops"
	for c in $(mode_collectors node); do args+=("--collector.$c"); done
	has_flag bpf.pin-path && args+=("--bpf.pin-path=$pin")
	# The unit's capabilities serve either level; full reads the most
	# (/proc/<pid>/exe needs CAP_SYS_PTRACE for other users' processes).
	has_flag metrics.level && args+=(--metrics.level=full)
	if has_flag slurm.node-metadata.squeue; then
		args+=(--slurm.node-metadata.squeue=false)
	elif has_flag slurm.scontrol-fallback; then
		args+=(--slurm.scontrol-fallback=false)
	fi
	setsid setpriv --reuid=nobody --regid=nogroup --clear-groups --no-new-privs \
		--inh-caps="-all${caps:+,$caps}" --ambient-caps="-all${caps:+,$caps}" --bounding-set="-all${bound:+,$bound}" \
		"$WORK/jobscope-cap" --web.listen-address=127.0.0.1:$PORT_CAP --slurm.job-props-dir="$WORK/noprops" \
		"${args[@]}" >"$WORK/log/jobscope-cap-$name.log" 2>&1 </dev/null &
	echo $! >"$WORK/run/jobscope-cap.pid"
	if wait_for 60 "jobscope as nobody ($name)" curl -fsS -o /dev/null "http://127.0.0.1:$PORT_CAP/metrics"; then
		sleep 1 # a second scrape: caches and the first BPF counts settle
		scrape $PORT_CAP "$WORK/metrics/cap-$name.txt" || rc=1
	else
		rc=1
	fi
	CAP_EFF=$(awk '/^CapEff/{print $2}' /proc/"$(cat "$WORK/run/jobscope-cap.pid")"/status 2>/dev/null)
	CAP_UID=$(awk '/^Uid:/{print $2}' /proc/"$(cat "$WORK/run/jobscope-cap.pid")"/status 2>/dev/null)
	kill_pidfile "$WORK/run/jobscope-cap.pid" 5
	return $rc
}
# cap_signature FILE: what a capability changes, in one line.
cap_signature() {
	local f=$1 c out=""
	for c in cgroup ebpf process; do has_collector "$c" && out+="$c=$(mnum "$f" jobscope_scrape_collector_success "collector=\"$c\"") "; done
	has_collector ebpf && out+="bpf_net=$(mnum "$f" jobscope_bpf_network_enabled) "
	has_collector process && out+="procs=$(mnum "$f" slurm_job_processes "jobid=\"$J_HOLD\"") "
	out+="meta=$(mlabel "$f" slurm_job_info "jobid=\"$J_BURN\"" metadata_source)/$(mlabel "$f" slurm_job_info "jobid=\"$J_BURN\"" account) "
	out+="errors=$(grep -E '^jobscope_collector_errors_total\{' "$f" | grep -v 'cause="no_data"' | awk '$NF>0' |
		sed -n 's/.*cause="\([^"]*\)".*collector="\([^"]*\)".*/\2:\1/p' | sort -u | paste -sd, -)"
	printf '%s\n' "$out"
}

if [ -f "$UNIT" ]; then
	CAPS=$(unit_caps AmbientCapabilities)
	BOUND=$(unit_caps CapabilityBoundingSet)
	log "capability test: ambient ${CAPS:-none}"
	install -m 0755 "$BIN" "$WORK/jobscope-cap"
	if cap_run unit "$CAPS" "$BOUND"; then
		K=$WORK/metrics/cap-unit.txt
		check_eq "caps: runs as uid nobody" 65534 "$CAP_UID"
		check_eq "caps: effective caps == unit's AmbientCapabilities" "$(cap_names "${CAPS:-}")" \
			"$(capsh --decode="$CAP_EFF" | sed 's/.*=//' | tr , '\n' | sort | paste -sd, -)"
		check_eq "caps: all 5 running jobs found" 5 "$(mnum "$K" jobscope_jobs)"
		for j in $J_BURN $J_HOLD $J_WRITE $J_OOM $J_GPU; do
			read -r u a p mem <<<"${WANT[$j]}"
			check_eq "caps: job $j user/account/source (environ, no props)" "$u/$a/environ" \
				"$(mlabel "$K" slurm_job_info "jobid=\"$j\"" user)/$(mlabel "$K" slurm_job_info "jobid=\"$j\"" account)/$(mlabel "$K" slurm_job_info "jobid=\"$j\"" metadata_source)"
		done
		for c in $(mode_collectors node); do
			case $c in gpu | power) continue ;; esac # no such hardware here, as root either
			check_eq "caps: collector $c success" 1 "$(mnum "$K" jobscope_scrape_collector_success "collector=\"$c\"")"
		done
		has_collector ebpf && check_eq "caps: ebpf network programs attached" 1 "$(mnum "$K" jobscope_bpf_network_enabled)"
		check_eq "caps: no collector errors" "" \
			"$(grep -E '^jobscope_collector_errors_total\{' "$K" | awk '$NF>0' | grep -v 'cause="no_data"' | head -3 | tr '\n' ' ')"
		check_eq "caps: no (null) label value" 0 "$(grep -c '="(null)"' "$K")"
		check_eq "caps: memory limit of holder" 629145600 \
			"$(mval "$K" slurm_job_memory_limit_bytes "jobid=\"$J_HOLD\"" | awk '{printf "%.0f", $1}')"
		# Least privilege: dropping any one capability loses something.
		FULL=$(cap_signature "$K")
		log "caps: full set: $FULL"
		for c in $(tr , ' ' <<<"$CAPS"); do
			less=$(tr , '\n' <<<"$CAPS" | grep -vx -- "$c" | paste -sd, -)
			if cap_run "no-${c#+}" "$less" "$less"; then
				sig=$(cap_signature "$WORK/metrics/cap-no-${c#+}.txt")
			else
				sig="no /metrics"
			fi
			if [ "$sig" != "$FULL" ]; then
				row "caps: without cap_${c#+} something is lost" "differs from full set" "$(diff <(tr ' ' '\n' <<<"$FULL") <(tr ' ' '\n' <<<"$sig") | sed -n 's/^> //p' | paste -sd' ' -)" PASS
			else
				row "caps: without cap_${c#+} something is lost" "differs from full set" "same: $sig" FAIL
			fi
		done
	else
		row "caps: jobscope starts as nobody with the unit's caps" "/metrics answers" "no answer" FAIL
		tail -20 "$WORK/log/jobscope-cap-unit.log" >&2
	fi
else
	skip "caps: systemd unit" "$UNIT missing"
fi

report_e2e
vmetrics_e2e
js1_setup && js1_e2e
notify_e2e
munge_setup && munge_e2e

# --- teardown checks --------------------------------------------------------------------------------------------

for p in jobscope-node jobscope-ctl jobscope-ctltext jobscope-restd slurmrestd jobscope-broken prometheus; do kill_pidfile "$WORK/run/$p.pid" 5; done
scancel --quiet --full --user=alice 2>/dev/null
scancel --quiet --full --user=bob 2>/dev/null
wait_for 30 "jobs gone" sh -c "[ -z \"\$(squeue -h -o %i)\" ]"
wait_for 15 "epilogs ran" sh -c "[ -z \"\$(ls -A $WORK/props)\" ]"
check_eq "epilog removed every props file" "" "$(ls -A "$WORK/props" | paste -sd, -)"
if [ "${JOBSCOPE_E2E_KEEP:-0}" != 1 ]; then
	teardown
	left=""
	for p in slurmd slurmctld slurmdbd mariadbd munged; do [ -f "$WORK/run/$p.pid" ] && left+="$p "; done
	for p in /sys/fs/cgroup/*/"slurm_$NODE"; do [ -d "$p" ] && left+="$p "; done
	[ -e "$BPF_PIN" ] && left+="$BPF_PIN "
	for p in "$BPF_PIN_CAP"-*; do [ -e "$p" ] && left+="$p "; done
	check_eq "teardown: no daemons, cgroups or pins left" "" "${left% }"
fi

print_table
if [ "$FAILS" -gt 0 ]; then
	log "FAILED ($FAILS); logs in $WORK/log"
	for f in jobscope-node jobscope-ctl jobscope-ctltext jobscope-restd slurmrestd jobscope-cap jobscope-broken; do
		[ -s "$WORK/log/$f.log" ] && { echo "--- $f.log (last 15 lines)"; tail -15 "$WORK/log/$f.log"; }
	done
	exit 1
fi
log "PASS"
exit 0
