# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# Sourced first by every guest script: its settings (vm.env), log/die, the
# assertion helpers, and a one-node Slurm cluster under systemd with
# CgroupPlugin=cgroup/v2 (no IgnoreSystemd: slurmd asks systemd over dbus for
# its slurmstepd scope, as on a real node), with slurmdbd where the VM has it.

NODE=node1
CLUSTER=vm
SLURM_ETC=/etc/slurm

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SRC=$(cd "$HERE/../../.." && pwd) # the jobscope tree on the payload disk
. "$HERE/../vm.env"                # VM, DBD, SUITE (run.sh writes it)
T0=$(date +%s)
ROLE=$(basename "$0" .sh)
log() { printf '[%s %s %4ds] %s\n' "$ROLE" "$VM" "$(($(date +%s) - T0))" "$*"; }
die() { # e2e.sh redefines it to put the cause in its table
	log "FATAL: $*"
	exit 2
}
# wait_for and need come from test/lib/assert.sh.
. "$HERE/../../lib/assert.sh"

# heartbeat: the queue on the console every 60 s, for whoever reads the
# serial log of a VM that seems stuck.
# It ends with the script ($$ is the script's pid in the subshell too): it
# holds the console pipe open, and the runner waits for that pipe's end.
heartbeat() {
	while sleep 60 && kill -0 $$ 2>/dev/null; do
		echo "[heartbeat $(cut -d' ' -f1 /proc/uptime)s load $(cut -d' ' -f1-3 /proc/loadavg)] $(squeue -h -o '%i:%T:%r' 2>/dev/null | paste -sd' ' -)"
	done &
}
# explain_job JOBID: why a job is where it is, for the log.
explain_job() {
	scontrol show job "$1" 2>&1 | grep -E 'JobState|Reason|TRES|NodeList|Partition' | tr -s ' ' | paste -sd' ' -
	sinfo -N -o '%N %P %T %C %m %e' 2>&1 | paste -sd';' -
	tail -5 /var/log/slurm/slurmctld.log 2>/dev/null
}

slurm_version() { sinfo --version 2>/dev/null | awk '{print $2}'; }

# write_slurm_conf [EXTRA LINES]: slurm.conf and cgroup.conf for this VM.
write_slurm_conf() {
	local topo acct=""
	topo=$(slurmd -C | head -1 | tr ' ' '\n' |
		grep -E '^(CPUs|Boards|SocketsPerBoard|CoresPerSocket|ThreadsPerCore)=' | paste -sd' ' -)
	[ -n "$topo" ] || die "slurmd -C gave no topology"
	if [ "$DBD" = yes ]; then
		acct="AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=$NODE
AccountingStorageEnforce=associations"
	fi
	install -d -m 0755 "$SLURM_ETC"
	# Both partitions share cores (FORCE): a job of an OverSubscribe=NO
	# partition keeps FORCE partitions' jobs off the whole node (24.11,
	# measured), and the mix has more jobs than the VM has cores.
	cat >"$SLURM_ETC/slurm.conf" <<EOF
ClusterName=$CLUSTER
SlurmctldHost=$NODE
SlurmUser=slurm
AuthType=auth/munge
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/cgroup
TaskPlugin=task/cgroup,task/affinity
JobAcctGatherType=jobacct_gather/cgroup
JobAcctGatherFrequency=task=10
$acct
JobCompType=jobcomp/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
SchedulerType=sched/backfill
SchedulerParameters=sched_interval=2
PriorityType=priority/multifactor
PriorityCalcPeriod=1
MailProg=/bin/true
Prolog=$SLURM_ETC/prolog.d/*
Epilog=$SLURM_ETC/epilog.d/*
PrologFlags=Contain
MpiDefault=none
ReturnToService=2
MinJobAge=600
KillWait=2
SlurmctldTimeout=60
SlurmdTimeout=120
MessageTimeout=30
Licenses=matlab:4,fluent:2
$(printf '%s\n' "$@")
NodeName=$NODE NodeAddr=127.0.1.1 $topo RealMemory=${VM_NODE_MEM:-2000} State=UNKNOWN
PartitionName=debug Nodes=$NODE Default=YES MaxTime=30 State=UP OverSubscribe=FORCE:8
PartitionName=batch Nodes=$NODE MaxTime=30 State=UP OverSubscribe=FORCE:8
EOF
	# SystemdTimeout (23.02 and later; 22.05 refuses the key): step creation
	# waits for systemd's scope, slow under TCG.
	local systemd_timeout="SystemdTimeout=15000"
	case $(slurmd -V | awk '{print $2}') in 2[0-2].*) systemd_timeout="" ;; esac
	cat >"$SLURM_ETC/cgroup.conf" <<EOF
CgroupPlugin=cgroup/v2
ConstrainCores=yes
ConstrainRAMSpace=yes
ConstrainSwapSpace=no
$systemd_timeout
EOF
	install -d -m 0755 "$SLURM_ETC/prolog.d" "$SLURM_ETC/epilog.d"
}

start_munge() {
	dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 status=none
	chown munge:munge /etc/munge/munge.key
	chmod 400 /etc/munge/munge.key
	systemctl start munge || die "munge did not start"
	need 20 munge sh -c 'munge -n | unmunge'
}

start_dbd() {
	systemctl start mariadb || die "mariadb did not start"
	need 60 mariadb mariadb-admin ping
	mariadb -e "CREATE USER IF NOT EXISTS 'slurm'@'localhost' IDENTIFIED BY 'vmtest';
		GRANT ALL ON slurm_acct_db.* TO 'slurm'@'localhost';" || die "MariaDB setup failed"
	cat >"$SLURM_ETC/slurmdbd.conf" <<EOF
AuthType=auth/munge
DbdHost=$NODE
SlurmUser=slurm
DebugLevel=info
LogFile=/var/log/slurm/slurmdbd.log
PidFile=/run/slurmdbd/slurmdbd.pid
StorageType=accounting_storage/mysql
StorageHost=localhost
StorageUser=slurm
StoragePass=vmtest
StorageLoc=slurm_acct_db
EOF
	chown slurm:slurm "$SLURM_ETC/slurmdbd.conf"
	chmod 600 "$SLURM_ETC/slurmdbd.conf"
	systemctl start slurmdbd || die "slurmdbd did not start: $(tail -5 /var/log/slurm/slurmdbd.log)"
	need 90 slurmdbd sacctmgr -n show cluster
	sacctmgr -i add cluster "$CLUSTER" >/dev/null || die "sacctmgr add cluster failed"
}

start_slurm() {
	install -d -o slurm -g slurm -m 0755 /var/spool/slurmctld /var/log/slurm
	install -d -m 0755 /var/spool/slurmd
	start_munge
	[ "$DBD" = yes ] && start_dbd
	systemctl start slurmctld || die "slurmctld did not start: $(tail -5 /var/log/slurm/slurmctld.log)"
	need 60 slurmctld sh -c 'scontrol ping | grep -q UP'
	systemctl start slurmd || die "slurmd did not start: $(tail -5 /var/log/slurm/slurmd.log)"
	need 90 "node $NODE idle" sh -c "sinfo -h -n $NODE -o %T | grep -qx idle"
	need 120 "a first job" timeout 60 srun -N1 -n1 --mem=10M -t1 true
}

# setup_users: alice (physics, chemistry) and bob (chemistry); with slurmdbd
# also their associations, fairshares and a second QOS.
setup_users() {
	local u
	for u in alice bob; do id "$u" >/dev/null 2>&1 || useradd -m -s /bin/sh "$u"; done
	[ "$DBD" = yes ] || return 0
	sacctmgr -i add qos high priority=100 >/dev/null || die "add qos"
	sacctmgr -i add account physics cluster="$CLUSTER" fairshare=60 >/dev/null || die "add account physics"
	sacctmgr -i add account chemistry cluster="$CLUSTER" fairshare=40 >/dev/null || die "add account chemistry"
	sacctmgr -i add user alice account=physics,chemistry defaultaccount=physics qos=normal,high >/dev/null || die "add alice"
	sacctmgr -i add user bob account=chemistry defaultaccount=chemistry >/dev/null || die "add bob"
	sacctmgr -i add user root account=physics >/dev/null || true
	need 60 "associations in slurmctld" sh -c 'scontrol show assoc_mgr users=bob flags=assoc | grep -q "Account=chemistry"'
}

# submit USER ACCOUNT PARTITION SCRIPT SBATCH-ARGS...: prints the job id.
submit() {
	local user=$1 acct=$2 part=$3 script=$4
	shift 4
	runuser -u "$user" -- sbatch --parsable -A "$acct" -p "$part" -t 20 \
		--chdir=/var/tmp/jobs -o "/var/tmp/out/%j.out" "$@" "/var/tmp/jobs/$script" | cut -d';' -f1
}
job_state() { squeue -h -j "$1" -o %T 2>/dev/null; }
out_has() { grep -q "$2" "/var/tmp/out/$1.out" 2>/dev/null; }

# write_jobs: the job scripts of the mix, in /var/tmp/jobs.
write_jobs() {
	install -d -m 0755 /var/tmp/jobs
	install -d -m 1777 /var/tmp/out /var/tmp/scratch
	# CPU burner: one srun step burns a core for BURN_S seconds, then the
	# batch step idles, so the job's CPU time stops moving.
	cat >/var/tmp/jobs/burn.sh <<'EOF'
#!/bin/sh
srun -n1 sh -c "timeout ${BURN_S:-20} sh -c 'while :; do :; done'; exit 0"
echo burned
exec sleep 900
EOF
	# One busy thread alone on its core for PIN_S seconds: it never leaves
	# the CPU, so only a per-core count that includes the running slice is
	# current at a scrape.
	cat >/var/tmp/jobs/pin.sh <<'EOF'
#!/bin/sh
echo pinning
timeout ${PIN_S:-30} sh -c 'while :; do :; done'
echo pinned
exec sleep 900
EOF
	# Memory holder: 400 MiB really touched (perl's vec zero-fills).
	cat >/var/tmp/jobs/hold.sh <<'EOF'
#!/bin/sh
exec perl -e '$x = ""; vec($x, 400*1024*1024 - 1, 8) = 1; print "holding\n"; $| = 1; sleep 900'
EOF
	cat >/var/tmp/jobs/write.sh <<'EOF'
#!/bin/sh
dd if=/dev/zero of=/var/tmp/scratch/$SLURM_JOB_ID.dat bs=1M count=${WRITE_MB:-100} conv=fsync status=none
echo written
exec sleep 900
EOF
	# OOM: 300 MiB under --mem=100M; the batch step survives the kill.
	cat >/var/tmp/jobs/oom.sh <<'EOF'
#!/bin/sh
perl -e '$x = ""; vec($x, 300*1024*1024 - 1, 8) = 1'
echo "oom rc=$?"
exec sleep 900
EOF
	# OOM as the batch step's main process: the job ends OUT_OF_MEMORY.
	cat >/var/tmp/jobs/oomdie.sh <<'EOF'
#!/bin/sh
exec perl -e '$x = ""; vec($x, 300*1024*1024 - 1, 8) = 1'
EOF
	# Network: NET_MB MiB through a TCP connection on loopback, both ends in
	# the job, so its ingress and egress each see them; then 200 short ones.
	cat >/var/tmp/jobs/net.sh <<'EOF'
#!/bin/sh
exec perl -e '
use IO::Socket::INET;
my $mb = $ENV{NET_MB} || 50;
my $l = IO::Socket::INET->new(Listen => 1, LocalAddr => "127.0.0.1", LocalPort => 0, Proto => "tcp", ReuseAddr => 1) or die "listen: $!";
my $port = $l->sockport;
if (fork() == 0) {
	my $c = IO::Socket::INET->new(PeerAddr => "127.0.0.1", PeerPort => $port, Proto => "tcp") or die "connect: $!";
	my $buf = "x" x 1048576;
	for (1 .. $mb) { print $c $buf or die "write: $!"; }
	close $c; exit 0;
}
my $s = $l->accept or die "accept: $!";
my ($n, $got) = (0, 0);
while (($n = sysread($s, my $b, 65536)) > 0) { $got += $n; }
wait;
# Short connections the server closes first, as slurmctld does: each
# ends with an ACK from a TIME_WAIT socket through the kernel control
# socket, the path that once crashed a 6.1 kernel in the egress program.
if (fork() == 0) {
	for (1 .. 200) { my $c = IO::Socket::INET->new(PeerAddr => "127.0.0.1", PeerPort => $port, Proto => "tcp") or next; my $x = <$c>; close $c; }
	exit 0;
}
for (1 .. 200) { my $a = $l->accept or last; print $a "bye\n"; close $a; }
wait;
$| = 1; print "received $got\n";
sleep 900;'
EOF
	# Multi-step: two srun steps in parallel (each with part of the job's
	# memory: a step asks for all of it by default), then a third.
	cat >/var/tmp/jobs/steps.sh <<'EOF'
#!/bin/sh
srun -n1 --exact --mem=80M sh -c "timeout ${STEP_S:-8} sh -c 'while :; do :; done'; exit 0" &
srun -n1 --exact --mem=80M sleep ${STEP_S:-8} &
wait
srun -n1 --exact true
echo steps-done
exec sleep 900
EOF
	cat >/var/tmp/jobs/sleep.sh <<'EOF'
#!/bin/sh
exec sleep ${SLEEP_S:-900}
EOF
	cat >/var/tmp/jobs/fail.sh <<'EOF'
#!/bin/sh
echo failing
exit 3
EOF
	cat >/var/tmp/jobs/true.sh <<'EOF'
#!/bin/sh
echo done
EOF
	chmod 755 /var/tmp/jobs/*.sh
}

# install_jobscope_hooks: contrib/slurm's prolog and epilog, as the README
# says (Prolog=/etc/slurm/prolog.d/* in slurm.conf).
install_jobscope_hooks() {
	local src=$1 f
	install -m 0755 "$src/contrib/slurm/prolog.sh" "$SLURM_ETC/prolog.d/50-jobscope.sh"
	install -m 0755 "$src/contrib/slurm/epilog.sh" "$SLURM_ETC/epilog.d/50-jobscope.sh"
	for f in "$src"/contrib/slurm/prolog.d/*; do [ -f "$f" ] && install -m 0755 "$f" "$SLURM_ETC/prolog.d/"; done
	for f in "$src"/contrib/slurm/epilog.d/*; do [ -f "$f" ] && install -m 0755 "$f" "$SLURM_ETC/epilog.d/"; done
}
