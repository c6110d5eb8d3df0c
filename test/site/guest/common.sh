# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# Sourced first by each site guest (ctl.sh, node.sh): the site's settings,
# the assertion helpers, this VM's place on the shared segment, munge with
# the site's key, Slurm's configuration (the same file on all three VMs, as
# a site keeps it), jobscope from its .deb, and the phase flags the VMs use
# to wait for each other.

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SRC=$(cd "$HERE/../../.." && pwd) # the payload tree
. "$HERE/../site.env"              # ROLE, IP, SITE_PAYLOAD_MB, SITE_BURN_S (run.sh writes it)
OUT=/payload/out
# The runner's unit has no HOME; Open MPI's mpicc fails without one
# (mca_base_var_init).
export HOME=/root
M=$OUT/metrics
mkdir -p "$M"
T0=$(date +%s)
log() { printf '[site %s %4ds] %s\n' "$ROLE" "$(($(date +%s) - T0))" "$*"; }
. "$SRC/test/lib/assert.sh"
die() {
	log "FATAL: $*"
	row "$ROLE: run reached its end" "no fatal error" "$*" FAIL
	finish
}

CLUSTER=site
SLURM_ETC=/etc/slurm
NODE_PORT=10817
CTL_PORT=10818
PROM_PORT=9090
AM_PORT=9093
NODE=$ROLE
SCOPE=""
# test/vm's helpers for ground truth (jobdir, usage_s, cgfile, cpulist)
# and check_percore; their unit-install functions are not used here.
. "$SRC/test/vm/guest/jobscope.sh"
. "$SRC/test/vm/guest/checks.sh"
SLUID_LAYOUT=yes

heartbeat() {
	while sleep 60 && kill -0 $$ 2>/dev/null; do
		echo "[heartbeat $ROLE $(cut -d' ' -f1 /proc/uptime)s load $(cut -d' ' -f1-3 /proc/loadavg)] $(squeue -h -o '%i:%j:%T:%N' 2>/dev/null | paste -sd' ' -)"
	done &
}

# net_up: the one NIC on the site's segment, a static address, the site's
# names in /etc/hosts, and this VM's name.
net_up() {
	local nic
	nic=$(ls /sys/class/net | grep -vx lo | head -1)
	[ -n "$nic" ] || die "no network interface"
	ip link set "$nic" up && ip addr add "$IP/24" dev "$nic" || die "address $IP on $nic"
	printf '127.0.0.1\tlocalhost\n10.77.0.10\tctl\n10.77.0.11\tc1\n10.77.0.12\tc2\n' >/etc/hosts
	hostname "$ROLE"
	echo "$ROLE" >/etc/hostname
	# vmtest-lo.service gave lo 127.0.1.1 for the one-VM suite; here the
	# NIC's address is the node's.
	ip addr del 127.0.1.1/32 dev lo 2>/dev/null || true
	log "network: $nic $IP"
}

start_munge() {
	install -o munge -g munge -m 0400 "$SRC/test/site/munge.key" /etc/munge/munge.key
	systemctl start munge || die "munge did not start"
	need 20 munge sh -c 'munge -n | unmunge'
}

# write_slurm_conf: one slurm.conf for the site. Both partitions share
# cores (FORCE) as test/vm's do: the mix has more jobs than the nodes have
# cores.
write_slurm_conf() {
	install -d -m 0755 "$SLURM_ETC" "$SLURM_ETC/prolog.d" "$SLURM_ETC/epilog.d"
	cat >"$SLURM_ETC/slurm.conf" <<EOC
ClusterName=$CLUSTER
SlurmctldHost=ctl
SlurmUser=slurm
AuthType=auth/munge
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
ProctrackType=proctrack/cgroup
TaskPlugin=task/cgroup,task/affinity
JobAcctGatherType=jobacct_gather/cgroup
JobAcctGatherFrequency=task=10
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=ctl
AccountingStorageEnforce=associations
JobCompType=jobcomp/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
SchedulerType=sched/backfill
SchedulerParameters=sched_interval=2
MailProg=/bin/true
Prolog=$SLURM_ETC/prolog.d/*
Epilog=$SLURM_ETC/epilog.d/*
PrologFlags=Alloc,Contain
MpiDefault=none
ReturnToService=2
MinJobAge=600
KillWait=2
SlurmctldTimeout=120
SlurmdTimeout=300
MessageTimeout=60
TCPTimeout=30
NodeName=c1 NodeAddr=10.77.0.11 CPUs=2 RealMemory=1800 State=UNKNOWN
NodeName=c2 NodeAddr=10.77.0.12 CPUs=2 RealMemory=1800 State=UNKNOWN
PartitionName=debug Nodes=c1,c2 Default=YES MaxTime=60 State=UP OverSubscribe=FORCE:8
PartitionName=batch Nodes=c1,c2 MaxTime=60 State=UP OverSubscribe=FORCE:8
EOC
	cat >"$SLURM_ETC/cgroup.conf" <<EOC
CgroupPlugin=cgroup/v2
ConstrainCores=yes
ConstrainRAMSpace=yes
ConstrainSwapSpace=no
SystemdTimeout=30000
EOC
	install -d -o slurm -g slurm -m 0755 /var/spool/slurmctld /var/log/slurm
	install -d -m 0755 /var/spool/slurmd
}

# users: alice and bob with the same uids on every VM (no directory
# service), and a working directory on every node (no shared filesystem:
# a job's files land on the node its batch step runs on).
users() {
	local u uid=2001
	for u in alice bob; do
		id "$u" >/dev/null 2>&1 || useradd -m -u "$uid" -s /bin/sh "$u"
		install -d -o "$u" -g "$u" -m 0755 "/var/tmp/site/$u"
		uid=$((uid + 1))
	done
}

# The site starts on the .deb of an earlier commit (run.sh builds it) and
# is upgraded to the current one (dist/) while jobs run.
OLD_DEB=$(ls "$SRC"/old/jobscope_*_amd64.deb 2>/dev/null | head -1)
NEW_DEB=$(ls "$SRC"/dist/jobscope_*_amd64.deb 2>/dev/null | head -1)
NEW_DEB_VERSION=$(dpkg-deb -f "$NEW_DEB" Version 2>/dev/null)
# The binary's version (jobscope_build_info) is the package's without its
# Debian revision (-1).
NEW_VERSION=${NEW_DEB_VERSION%-*}
OLD_VERSION=$(dpkg-deb -f "$OLD_DEB" Version 2>/dev/null)
OLD_VERSION=${OLD_VERSION%-*}

# install_jobscope DEB: the README's "Install on a cluster": the .deb, the
# prolog and epilog linked into slurm's directories, the job-end report
# turned on, and the report pointed at the site's Prometheus.
install_jobscope() {
	local deb=$1
	[ -f "$deb" ] || die "no jobscope .deb in the payload ($deb)"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$deb" >"$OUT/apt-jobscope.log" 2>&1 ||
		die "apt install $(basename "$deb") failed: $(tail -3 "$OUT/apt-jobscope.log")"
	ln -sf /usr/share/jobscope/slurm/prolog.sh "$SLURM_ETC/prolog.d/jobscope.sh"
	ln -sf /usr/share/jobscope/slurm/epilog.sh "$SLURM_ETC/epilog.d/jobscope.sh"
	ln -sf /usr/share/jobscope/slurm/prolog.d/jobscope-gpu-mapping.sh "$SLURM_ETC/prolog.d/"
	ln -sf /usr/share/jobscope/slurm/epilog.d/jobscope-gpu-mapping.sh "$SLURM_ETC/epilog.d/"
	ln -sf /usr/share/jobscope/slurm/epilog.d/jobscope-report.sh "$SLURM_ETC/epilog.d/"
	sed -i 's/^#ENABLE=yes/ENABLE=yes/' /etc/jobscope/report-epilog.conf
	sed -i 's|^#prometheus:|prometheus:|; s|^#  url: http://localhost:9090|  url: http://ctl:9090|' /etc/jobscope/report.yml
	log "installed $(basename "$deb")"
}

# upgrade_jobscope: the current .deb over the earlier one, as a site
# upgrades (apt install ./new.deb); its postinst restarts the units that
# ran. Checks the unit PORT serves again, now the new version.
upgrade_jobscope() { # PORT
	local v
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$NEW_DEB" >"$OUT/apt-upgrade.log" 2>&1 ||
		die "apt install $(basename "$NEW_DEB") over $(basename "$OLD_DEB") failed: $(tail -3 "$OUT/apt-upgrade.log")"
	check_eq "$ROLE: dpkg has the new jobscope" "$NEW_DEB_VERSION" "$(dpkg-query -W -f '${Version}' jobscope)"
	wait_for 180 "jobscope serves the new version" sh -c \
		"curl -fsS --max-time 60 http://127.0.0.1:$1/metrics | grep '^jobscope_build_info{' | grep -qF 'version=\"$NEW_VERSION\"'"
	v=$(curl -fsS --max-time 60 "http://127.0.0.1:$1/metrics" | grep '^jobscope_build_info{' | sed -n 's/.*[{,]version="\([^"]*\)".*/\1/p')
	check_eq "$ROLE: the unit on :$1 restarted into the new version (jobscope_build_info)" "$NEW_VERSION" "${v:-(no answer)}"
	log "upgraded $(basename "$OLD_DEB") -> $(basename "$NEW_DEB")"
}

# Phases: a held job named site-phase-NAME is the flag every VM sees in
# squeue (no shared filesystem, no ssh in the image).
phase_set() {
	sbatch -Q --hold -J "site-phase-$1" -p debug -t 1 --mem=1M -o /dev/null --wrap true >/dev/null ||
		log "could not set phase $1"
}
phase_is() { squeue -h -n "site-phase-$1" -o %i 2>/dev/null | grep -q .; }
phase_wait() { wait_for "$1" "phase $2" phase_is "$2"; }

finish() {
	{
		echo "site $ROLE: $(uname -r), Slurm $(slurmd -V 2>/dev/null | awk '{print $2}'), $(nproc) vCPUs, jobscope $(dpkg-query -W -f '${Version}' jobscope 2>/dev/null)"
		print_table
	} >"$OUT/table.txt"
	cat "$OUT/table.txt"
	journalctl -b --no-pager -o short-monotonic -u jobscope -u jobscope-controller >"$OUT/jobscope.log" 2>&1
	cp /var/log/slurm/*.log "$OUT/" 2>/dev/null
	exit $((FAILS > 99 ? 99 : FAILS))
}
