#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The site's controller and login node (ctl): munge, MariaDB, slurmdbd,
# slurmctld; jobscope's controller unit from the .deb; Debian's Prometheus
# and Alertmanager with the packaged config and rules. It submits the jobs
# (two users), checks what spans nodes (the MPI job's job_key and network
# on both nodes, Prometheus, the report, the epilog's report file) and
# tells c1 and c2 when to check their own (phase flags, common.sh).
set -uo pipefail
. "$(dirname "$0")/common.sh"
. "$HERE/rpcbudget.sh"

start_dbd() {
	systemctl start mariadb || die "mariadb did not start"
	need 60 mariadb mariadb-admin ping
	mariadb -e "CREATE USER IF NOT EXISTS 'slurm'@'localhost' IDENTIFIED BY 'site';
		GRANT ALL ON slurm_acct_db.* TO 'slurm'@'localhost';" || die "MariaDB setup failed"
	cat >"$SLURM_ETC/slurmdbd.conf" <<EOC
AuthType=auth/munge
DbdHost=ctl
SlurmUser=slurm
DebugLevel=info
LogFile=/var/log/slurm/slurmdbd.log
PidFile=/run/slurmdbd/slurmdbd.pid
StorageType=accounting_storage/mysql
StorageHost=localhost
StorageUser=slurm
StoragePass=site
StorageLoc=slurm_acct_db
EOC
	chown slurm:slurm "$SLURM_ETC/slurmdbd.conf"
	chmod 600 "$SLURM_ETC/slurmdbd.conf"
	systemctl start slurmdbd || die "slurmdbd did not start: $(tail -5 /var/log/slurm/slurmdbd.log)"
	need 120 slurmdbd sacctmgr -n show cluster
	sacctmgr -i add cluster "$CLUSTER" >/dev/null || die "sacctmgr add cluster failed"
	sacctmgr -i add account physics cluster="$CLUSTER" >/dev/null || die "add account physics"
	sacctmgr -i add account chemistry cluster="$CLUSTER" >/dev/null || die "add account chemistry"
	sacctmgr -i add user alice account=physics defaultaccount=physics >/dev/null || die "add alice"
	sacctmgr -i add user bob account=chemistry defaultaccount=chemistry >/dev/null || die "add bob"
	sacctmgr -i add user root account=physics >/dev/null || true
}

# prometheus_site: the packaged scrape config and rules as a site uses
# them: copied to /etc/prometheus, the example targets replaced by the
# site's hosts, scraped every 10 s so the run stays short.
prometheus_site() {
	local p=/usr/share/jobscope/prometheus
	cp "$p"/*.yml /etc/prometheus/
	sed -i -e "s/'node001:10817', 'node002:10817'/'c1:10817', 'c2:10817'/" -e "s/slurmctl:10818/ctl:10818/" \
		-e 's/\(scrape_interval\|evaluation_interval\): 30s/\1: 10s/' -e 's/scrape_timeout: 10s/scrape_timeout: 8s/' \
		/etc/prometheus/prometheus.yml
	# The alert rules' for: (5 to 30 minutes) outlast the run: the site's
	# copy waits 25 s instead, so the alerts reach Alertmanager firing. That
	# is the only change to the packaged rules (promtool's unit tests in
	# contrib/prometheus/tests hold the packaged durations).
	sed -i -E 's/^( +for: +)[0-9]+[smh]$/\125s/' /etc/prometheus/jobscope-*alert-rules.yml
	cp /usr/share/jobscope/alertmanager/alertmanager.yml /etc/prometheus/alertmanager.yml
	systemctl restart prometheus-alertmanager || die "alertmanager did not start"
	systemctl restart prometheus || die "prometheus did not start"
	need 120 prometheus curl -fsS -o /dev/null "http://127.0.0.1:$PROM_PORT/-/ready"
	need 120 alertmanager curl -fsS -o /dev/null "http://127.0.0.1:$AM_PORT/-/ready"
}

write_jobs() {
	install -d -m 0755 /var/tmp/site/jobs
	cat >/var/tmp/site/jobs/mpi.sh <<'EOJ'
#!/bin/sh
# Open MPI over TCP on the site's segment; mpirun starts its remote daemon
# through srun (inside the allocation).
export OMPI_MCA_pml=ob1 OMPI_MCA_btl=tcp,self OMPI_MCA_btl_tcp_if_include=10.77.0.0/24
mpirun -np 2 --map-by ppr:1:node /opt/site/xchg "$PAYLOAD" "$BURN_S" >xchg-$SLURM_JOB_ID.txt 2>&1
rc=$?
cat xchg-$SLURM_JOB_ID.txt
scontrol update jobid=$SLURM_JOB_ID comment="xchg rc=$rc $(grep -o 'payload [0-9]*' xchg-$SLURM_JOB_ID.txt)"
exec sleep 1800
EOJ
	cat >/var/tmp/site/jobs/burn.sh <<'EOJ'
#!/bin/sh
timeout "$BURN_S" sh -c 'while :; do :; done'
scontrol update jobid=$SLURM_JOB_ID comment=burned
exec sleep 1800
EOJ
	# The allocation in a step of its own: an OOM kill of the batch step
	# took the batch shell with it once (the job left the queue before
	# any check saw it), so the kill is kept out of the batch step.
	cat >/var/tmp/site/jobs/oom.sh <<'EOJ'
#!/bin/sh
srun -n1 perl -e '$x = ""; vec($x, 300*1024*1024 - 1, 8) = 1'
scontrol update jobid=$SLURM_JOB_ID comment="oom rc=$?"
exec sleep 1800
EOJ
	printf '#!/bin/sh\nexec sleep 1800\n' >/var/tmp/site/jobs/sleep.sh
	# One second of CPU in every ten: an array task's counters grow across
	# the upgrade at little cost to the shared vCPUs.
	cat >/var/tmp/site/jobs/tick.sh <<'EOJ'
#!/bin/sh
while :; do timeout 1 sh -c 'while :; do :; done'; sleep 9; done
EOJ
	chmod 755 /var/tmp/site/jobs/*.sh
}
submit() { # USER ACCOUNT SCRIPT SBATCH-ARGS...: the job id
	local user=$1 acct=$2 script=$3
	shift 3
	runuser -u "$user" -- sbatch --parsable -A "$acct" -t 40 --chdir="/var/tmp/site/$user" \
		-o "%x-%j.out" "$@" "/var/tmp/site/jobs/$script" | cut -d';' -f1
}
comment_has() { squeue -h -j "$1" -o %k 2>/dev/null | grep -q "$2"; }

# Alertmanager's view (GET /api/v2/alerts lists the alerts not resolved).
# am_json ALERTNAME LABEL VALUE: the first such alert, JSON; empty if none.
am_json() {
	curl -fsS --max-time 20 "http://127.0.0.1:$AM_PORT/api/v2/alerts" |
		jq -c --arg a "$1" --arg l "$2" --arg v "$3" '[.[] | select(.labels.alertname == $a and .labels[$l] == $v)] | .[0] // empty'
}
# am_alert ...: "STATE RECEIVER,..." of it; empty if none.
am_alert() { am_json "$@" | jq -r '"\(.status.state) \([.receivers[].name] | sort | join(","))"'; }
am_active() { [[ $(am_alert "$@") == "active "* ]]; }
am_gone() { [ -z "$(am_alert "$@")" ]; }
# check_alert ALERTNAME LABEL VALUE RECEIVER WHAT: active in Alertmanager
# (fired, past its for:) within 300 s, routed to RECEIVER.
check_alert() {
	wait_for 300 "$1 in Alertmanager" am_active "$1" "$2" "$3"
	check_eq "$5: $1{$2=\"$3\"} active in Alertmanager, receiver" "active $4" "$(am_alert "$1" "$2" "$3")"
}
# secs "[D-][HH:]MM:SS[.mmm]": seconds (sacct's times).
secs() { awk -F'[-:]' '{ n=NF; s=$n; if(n>=2) s+=$(n-1)*60; if(n>=3) s+=$(n-2)*3600; if(n>=4) s+=$(n-3)*86400; printf "%.3f\n", s }'; }

# restd_budget: the RPC budget again with the unit on its slurmrestd source
# (--slurm.source=slurmrestd; the measurement is test/vm/guest/rpcload.sh's
# restd phase): Debian's slurmrestd on a unix socket with rest_auth/local,
# run as the unit's user (it refuses root and SlurmUser), so slurmctld
# counts its RPCs under that user; the unit at a 10 s poll interval, so the
# window of two to three intervals takes 30 s.
restd_budget() {
	local sock=/run/jobscope-restd/slurmrestd.sock grp runs
	grp=$(id -gn jobscope)
	install -d -m 0750 -o jobscope -g "$grp" "$(dirname "$sock")"
	systemd-run --unit=site-slurmrestd -p User=jobscope -p Group="$grp" \
		"$(command -v slurmrestd)" -a rest_auth/local "unix:$sock" >/dev/null 2>&1 ||
		{ row "rpc budget (slurmrestd): slurmrestd starts" started "$(command -v slurmrestd || echo 'not installed')" FAIL; return; }
	wait_for 60 "slurmrestd's socket" test -S "$sock"
	cp /etc/default/jobscope /root/jobscope.default.budget
	sed -i "s|^CONTROLLER_ARGS=.*|CONTROLLER_ARGS=\"--slurm.poll-interval=10s --slurm.source=slurmrestd --slurm.restd.url=unix://$sock\"|" /etc/default/jobscope
	systemctl restart jobscope-controller
	# Polls start with scrapes: scrape until both slurmrestd sources have
	# answered (every other source polls at the same first scrapes).
	restd_served() {
		curl -fsS --max-time 20 "http://127.0.0.1:$CTL_PORT/metrics" 2>/dev/null | awk '
			/^jobscope_slurm_up\{source="(jobs|nodes)"\} 1$/ {up++}
			/^jobscope_slurm_command_runs_total\{command="slurmrestd:jobs"\}/ {asked = 1}
			END {exit !(up == 2 && asked)}'
	}
	wait_for 120 "the controller unit on slurmrestd" restd_served
	runs=$(curl -fsS --max-time 20 "http://127.0.0.1:$CTL_PORT/metrics" | awk '/^jobscope_slurm_command_runs_total\{command="slurmrestd:(jobs|nodes)"\}/ {n++} END {print n + 0}')
	check_eq "rpc budget (slurmrestd): the unit asks slurmrestd for jobs and nodes" 2 "$runs"
	rpcbudget_check "$(systemctl show -p MainPID --value jobscope-controller)" "$CTL_PORT" "$RPCB_TABLE_RESTD" "rpc budget (slurmrestd)"
	journalctl -b --no-pager -o short-monotonic -u site-slurmrestd >"$OUT/slurmrestd.log" 2>&1
	cp /root/jobscope.default.budget /etc/default/jobscope
}

# --- Slurm ---------------------------------------------------------------------
net_up
heartbeat
users
write_slurm_conf
start_munge
log "munge up"
start_dbd
log "mariadb and slurmdbd up"
systemctl start slurmctld || die "slurmctld did not start: $(tail -5 /var/log/slurm/slurmctld.log)"
need 120 slurmctld sh -c 'scontrol ping | grep -q UP'
both_idle() { [ "$(sinfo -h -N -o '%N %T' | sort -u | paste -sd, -)" = "c1 idle,c2 idle" ]; }
wait_for 600 "c1 and c2 idle" both_idle
check_eq "sinfo on ctl: c1 and c2 idle" "c1 idle,c2 idle" "$(sinfo -h -N -o '%N %T' | sort -u | paste -sd, -)"
both_idle || die "compute nodes never came up: $(sinfo -h -N -o '%N %T %E' | paste -sd';' -)"
log "slurm up: $(sinfo -h -N -o '%N:%T' | paste -sd' ' -)"

# --- jobscope (the earlier .deb), the upgrade jobs, the upgrade ---------------------
install_jobscope "$OLD_DEB"
systemctl disable --now jobscope >/dev/null 2>&1
systemctl enable --now jobscope-controller >/dev/null 2>&1
need 120 "controller unit serves" curl -fsS -o /dev/null "http://127.0.0.1:$CTL_PORT/metrics"
# Prometheus watches the upgrade's jobs from their start (the usage
# report counts only what it saw: started after them, it missed job 1's
# first CPU seconds, 2% of alice's usage in run 1).
prometheus_site
RUN_START=$(date +%s)
write_jobs
# The upgrade's jobs: one on each compute node, so each node's upgrade
# has a running job to keep counting; they stay for the rest of the run.
J_IDLE=$(submit alice physics sleep.sh -J idle2 -n1 -c2 --mem=100M -w c1)
J_ARR=$(submit bob chemistry tick.sh -J arr -n1 --mem=50M --array=1-2 -w c2)
for j in J_IDLE J_ARR; do
	[[ ${!j} =~ ^[0-9]+$ ]] || die "sbatch for $j failed: '${!j}'"
done
all_running() { [ -z "$(squeue -h -t PD -o %j | grep -v '^site-phase')" ]; }
need 300 "upgrade jobs running" all_running
sleep 15 # a tick of the array and a few scrapes on the earlier version
phase_set upgrade
upgrade_jobscope "$CTL_PORT"
wait_for 600 "c1 upgraded" phase_is c1-upgraded || row "c1 upgraded its jobscope" "within 600 s" never FAIL
wait_for 600 "c2 upgraded" phase_is c2-upgraded || row "c2 upgraded its jobscope" "within 600 s" never FAIL

# --- Prometheus, Alertmanager: the current package's files, restarted --------------
prometheus_site
check_eq "site rules: every for: of the alert rules is 25s" 0 "$(grep -hE '^ +for:' /etc/prometheus/jobscope-*alert-rules.yml | grep -vc 'for: 25s$')"
log "jobscope controller, prometheus, alertmanager up"

# --- the rest of the jobs --------------------------------------------------------------
PAYLOAD=$((SITE_PAYLOAD_MB * 1048576))
J_MPI=$(submit alice physics mpi.sh -J mpi -N2 --ntasks-per-node=1 -c1 --mem=300M --export=ALL,PAYLOAD=$PAYLOAD,BURN_S=$SITE_BURN_S)
J_CPU=$(submit bob chemistry burn.sh -J burn -n1 --mem=200M --export=ALL,BURN_S=$SITE_BURN_S)
J_OOM=$(submit bob chemistry oom.sh -J oom -n1 --mem=100M)
for j in J_MPI J_CPU J_OOM; do
	[[ ${!j} =~ ^[0-9]+$ ]] || die "sbatch for $j failed: '${!j}'"
done
log "jobs: mpi=$J_MPI cpu=$J_CPU oom=$J_OOM idle=$J_IDLE arr=$J_ARR"
need 600 "MPI exchange done" comment_has "$J_MPI" "xchg rc="
check_eq "MPI job: xchg exit status and payload" "xchg rc=0 payload $PAYLOAD" "$(squeue -h -j "$J_MPI" -o %k)"
need 300 "burner done" comment_has "$J_CPU" burned
gone() { ! squeue -h -j "$1" -o %i 2>/dev/null | grep -q .; }
wait_for 300 "oom job done" sh -c "squeue -h -j $J_OOM -o %k | grep -q 'oom rc=' || ! squeue -h -j $J_OOM -o %i | grep -q ."
gone "$J_OOM" && die "OOM job $J_OOM left the queue before its checks: $(sacct -n -X -j "$J_OOM" -o State,ExitCode | head -1)"
need 300 "no job of the mix pending" all_running
sleep 25 # two scrapes of Prometheus past the last change
phase_set mix

# --- what spans nodes ------------------------------------------------------------------
for n in c1 c2; do curl -fsS --max-time 60 "http://$n:$NODE_PORT/metrics" >"$M/$n.txt" || row "scrape $n:$NODE_PORT from ctl" answers "no answer" FAIL; done
check_eq "MPI job on c1 and c2 (squeue)" "c[1-2]" "$(squeue -h -j "$J_MPI" -o %N)"
k1=$(mlabel "$M/c1.txt" slurm_job_info "jobid=\"$J_MPI\"" job_key)
k2=$(mlabel "$M/c2.txt" slurm_job_info "jobid=\"$J_MPI\"" job_key)
check_eq "MPI job: job_key on c1 == on c2 (non-empty)" "$k1" "${k2:-(empty)}"
check_eq "MPI job: job_key is the SLUID" "$(sluid "$J_MPI")" "$k1"
union=$(cat "$M/c1.txt" "$M/c2.txt" | grep -E '^slurm_job_info\{' | sed -n 's/.*[{,]jobid="\([0-9]*\)".*/\1/p' | sort -un | paste -sd, -)
check_eq "c1 and c2 together export every running job" "$(squeue -h -t R -o %A | sort -un | paste -sd, -)" "$union"
net() { mval "$M/$1.txt" slurm_job_network_bytes_total "jobid=\"$J_MPI\"" "direction=\"$2\""; }
tx1=$(net c1 transmit) rx1=$(net c1 receive) tx2=$(net c2 transmit) rx2=$(net c2 receive)
check_close "MPI network: rx on c2 vs tx on c1" "$tx1" "$rx2" 0.02
check_close "MPI network: rx on c1 vs tx on c2" "$tx2" "$rx1" 0.02
# Headers (TCP/IP: 52 of each segment of up to 1448 bytes, 3.6%) and
# Open MPI's own wire-up and control messages: at most 10% over the payload.
for v in tx1 rx1 tx2 rx2; do check_within "MPI network: $v within [payload, payload+10%]" "$PAYLOAD" "$((PAYLOAD * 110 / 100))" "${!v}"; done

oom=$(cat "$M/c1.txt" "$M/c2.txt" >"$M/both.txt"; mnum "$M/both.txt" slurm_job_memory_events_total "jobid=\"$J_OOM\"" 'event="oom_kill"')
check_eq "OOM job: one oom_kill on its node" 1 "$oom"

# Prometheus and Alertmanager with the packaged files.
tgt=$(curl -fsS "http://127.0.0.1:$PROM_PORT/api/v1/targets" | jq -r '.data.activeTargets[] | "\(.labels.instance)=\(.health)"' | sort | paste -sd, -)
check_eq "Prometheus: every target up" "c1:10817=up,c2:10817=up,ctl:10818=up" "$tgt"
want_groups=$(cat /etc/prometheus/jobscope-*rules.yml | grep -cE '^  - name:')
got_groups=$(curl -fsS "http://127.0.0.1:$PROM_PORT/api/v1/rules" | jq '.data.groups | length')
check_eq "Prometheus: every packaged rule group loaded" "$want_groups" "$got_groups"
# With a job on two nodes, every rule still evaluates (the recording
# rules once failed on the MPI job's two series per node).
bad=$(curl -fsS "http://127.0.0.1:$PROM_PORT/api/v1/rules" | jq -r '[.data.groups[].rules[] | select(.health != "ok") | .name] | unique | join(",")')
check_eq "Prometheus: every rule evaluates (health ok)" "" "$bad"
check_eq "Prometheus: Alertmanager discovered" 1 "$(curl -fsS "http://127.0.0.1:$PROM_PORT/api/v1/alertmanagers" | jq '.data.activeAlertmanagers | length')"

# The report on the login node, as the job's owner.
runuser -u alice -- jobscope report "$J_MPI" >"$OUT/report-$J_MPI.txt" 2>&1
check_eq "jobscope report $J_MPI as alice: exit 0" 0 "$?"
check_eq "jobscope report $J_MPI lists both nodes" "c1 c2" "$(grep -owE 'c1|c2' "$OUT/report-$J_MPI.txt" | sort -u | paste -sd' ' -)"
check_eq "jobscope report $J_MPI: owner, account, cluster" "user alice; account physics; cluster $CLUSTER" \
	"$(grep -oE 'user [a-z]+; account [a-z]+' "$OUT/report-$J_MPI.txt" | head -1); $(grep -oE 'cluster [a-z]+' "$OUT/report-$J_MPI.txt" | head -1)"

# --- c1 and c2 check their own jobs, then the MPI job ends ------------------------
wait_for 900 "c1 checked" phase_is c1-checked || row "c1 finished its checks" "within 900 s" never FAIL
wait_for 900 "c2 checked" phase_is c2-checked || row "c2 finished its checks" "within 900 s" never FAIL

# The packaged alert rules (their for: shortened, prometheus_site) fire in
# Alertmanager: a drained node, a stopped node unit (c2), and a node unit
# blind to its job cgroups (c1). None of them is a job alert, so
# contrib/alertmanager/alertmanager.yml routes each to the site's own
# receiver, site-admins.
scontrol update nodename=c2 state=drain reason=site-drain-test
phase_set stop-c2
phase_set blind-c1
check_alert SlurmNodeDrainedOrDown node c2 site-admins "drain c2"
check_alert JobscopeDown instance c2:10817 site-admins "stop jobscope on c2"
phase_set start-c2
wait_for 600 "c1 blind" phase_is c1-blind || row "c1 blinded its node unit" "within 600 s" never FAIL
check_alert JobscopeJobsNotDiscovered instance c1:10817 site-admins "c1's unit with an empty --path.cgroupfs"
check_eq "JobscopeJobsNotDiscovered for c1: the cgroup collector's branch (label collector)" cgroup \
	"$(am_json JobscopeJobsNotDiscovered instance c1:10817 | jq -r '.labels.collector // empty')"
phase_set unblind-c1
wait_for 600 "c1 unblind" phase_is c1-unblind || row "c1 restored its node unit" "within 600 s" never FAIL
wait_for 300 "JobscopeJobsNotDiscovered resolved" am_gone JobscopeJobsNotDiscovered instance c1:10817
check_eq "c1's setting restored: JobscopeJobsNotDiscovered for c1 resolved" "" "$(am_alert JobscopeJobsNotDiscovered instance c1:10817)"

# The nodes record the MPI job's cgroup CPU (tasks and slurmstepd), then
# the job ends.
sleep 20 # c2's restarted unit scraped twice
phase_set stepd
wait_for 300 "nodes recorded the MPI job's cgroups" sh -c "squeue -h -o %j | grep -q '^site-phase-c1-jobusec-' && squeue -h -o %j | grep -q '^site-phase-c2-jobusec-'"
JOB_USEC=$(squeue -h -o %j | sed -n 's/^site-phase-c[12]-jobusec-\([0-9]*\)$/\1/p' | awk '{s += $1; n++} END {if (n == 2) print s}')
scancel "$J_MPI"
ended() { ! squeue -h -j "$1" -o %T | grep -q .; }
wait_for 300 "MPI job gone" ended "$J_MPI"
sleep 5
# No shared filesystem: the epilog's file is in the working directory on
# the job's first node; root reads it there through Slurm.
rep=$(timeout 300 srun -w c1 -N1 -n1 --mem=10M -t 2 cat "/var/tmp/site/alice/jobscope-$J_MPI.txt" 2>"$OUT/srun-report.err")
printf '%s\n' "$rep" >"$OUT/epilog-report-$J_MPI.txt"
check_eq "epilog report file in the MPI job's working directory on c1" "yes" "$([ -n "$rep" ] && echo yes || echo "no ($(head -c 200 "$OUT/srun-report.err"))")"
check_eq "epilog report names the job" yes "$(grep -q "$J_MPI" <<<"$rep" && echo yes || echo no)"

# The report's CPU time against Slurm's accounting. sacct's TotalCPU is the
# tasks' CPU (jobacct_gather/cgroup), summed over the steps (26.05's
# allocation line holds 0). The report's is the job cgroups' cpu.stat
# (slurm_job_cpu_usage_seconds_total), which also holds slurmstepd of
# every step on both nodes (step_*/slurm): so it lies between TotalCPU and
# what the job cgroups held just before the end (the nodes' record at
# phase stepd: TotalCPU plus slurmstepd), within 2%. slurmstepd is taken
# from the job cgroups as a whole because the remote orted step's cgroup,
# and its slurmstepd's own cpu.stat, are gone once mpirun ends.
wait_for 120 "sacct has the MPI job's end" sh -c "sacct -n -X -P -j $J_MPI -o State | grep -qv -e RUNNING -e PENDING"
TOTALCPU=$(sacct -n -P -j "$J_MPI" -o JobID,TotalCPU | awk -F'|' -v j="$J_MPI" '$1 "" != j {print $2}' | secs | awk '{s += $1} END {printf "%.3f\n", s}')
log "MPI job $J_MPI: sacct steps $(sacct -n -P -j "$J_MPI" -o JobID,TotalCPU | paste -sd' ' -); -X TotalCPU $(sacct -n -X -j "$J_MPI" -o TotalCPU | tr -d ' '); job cgroups ${JOB_USEC:-?} usec"
JOBCG_S=$(awk -v u="${JOB_USEC:-0}" 'BEGIN {printf "%.3f\n", u / 1e6}')
check_ge "MPI job: job cgroups' CPU before the end (c1+c2 cpu.stat) >= sacct TotalCPU" "$TOTALCPU" "$JOBCG_S"
sleep 20 # the nodes' last scrapes of the job in Prometheus
f=$OUT/report-$J_MPI.json
runuser -u alice -- jobscope report --format=json "$J_MPI" >"$f" 2>"$f.err"
R_MPI=$(jq -r '.cpu.used_seconds // "absent"' "$f" 2>/dev/null)
check_within "jobscope report $J_MPI as alice: CPU seconds in [TotalCPU, TotalCPU + slurmstepd] +-2%" "$TOTALCPU" "$JOBCG_S" "${R_MPI:-absent}" 0.02

# Every job ends before the nodes power off (slurmd would wait on them).
scancel -u alice; scancel -u bob
wait_for 120 "jobs gone" sh -c '[ -z "$(squeue -h -t R,CG -o %i)" ]'
# The usage report of alice over the run agrees with her jobs' reports,
# once all of them have ended and Prometheus has their nodes' last scrapes
# and a rule evaluation after them (10 s each here). A running job's usage
# trails its report by up to one rule evaluation (the report reads the raw
# series when it is made), which is no measure of the rules. The MPI job
# ended on two nodes at different scrapes: the usage rules carry each
# node's last value (contrib/prometheus/tests/usage.yml). On 26.05 the
# job_key is the SLUID: the usage report reads the submission inside it to
# count a job's CPU from 0, as the job report does from sacct's start
# (without it, each job here fell short by its first sample: 1.3 s and
# 0.56 s in the run that kept usage-series-*.txt).
sleep 25
u=$OUT/usage-alice.json
runuser -u alice -- jobscope report --format=json --user alice --since "$(($(date +%s) - RUN_START + 120))s" >"$u" 2>"$u.err"
check_eq "jobscope report --user alice: her jobs of the run (sacct)" \
	"$(sacct -n -X -u alice -S "$(date -d "@$RUN_START" +%Y-%m-%dT%H:%M:%S)" -o JobID | tr -d ' ' | sort -n | paste -sd, -)" \
	"$(jq -r '[.jobs[].id] | sort_by(tonumber) | join(",")' "$u" 2>/dev/null)"
sum=0
for id in $(jq -r '.jobs[].id' "$u" 2>/dev/null); do
	v=$(runuser -u alice -- jobscope report --format=json "$id" 2>/dev/null | jq -r '.cpu.used_seconds // 0')
	log "usage: job $id report ${v}s, usage $(jq -r --arg i "$id" '.jobs[] | select(.id == $i) | .cpu_hours_used' "$u") h"
	sum=$(awk -v s="$sum" -v v="$v" 'BEGIN {printf "%.6f\n", s + v}')
done
check_close "jobscope report --user alice: CPU-hours == sum of her jobs' reports" \
	"$(awk -v s="$sum" 'BEGIN {printf "%.6f\n", s / 3600}')" "$(jq -r '.totals.cpu_hours_used // "absent"' "$u" 2>/dev/null)" 0.02
# What both reports read, kept for a failed row: each node's raw CPU
# counter, slurm_job_cpus and slurm_job_info of alice's jobs with their
# sample times, the usage rules' series, and the rule group's health.
for id in $(jq -r '.jobs[].id' "$u" 2>/dev/null); do
	for q in "slurm_job_cpu_usage_seconds_total{jobid=\"$id\"}[15m]" "timestamp(slurm_job_cpus{jobid=\"$id\"})[15m:1s]" \
		"slurm_job_info{jobid=\"$id\"}[15m]" "job:slurm_job_cpu_usage_seconds:sum{jobid=\"$id\"}[15m]" \
		"job:slurm_job_scrape_timestamp_seconds:max{jobid=\"$id\"}[15m]"; do
		printf '### %s\n' "$q"
		curl -fsS --max-time 20 "http://127.0.0.1:$PROM_PORT/api/v1/query" --data-urlencode "query=$q" |
			jq -c '.data.result[] | {metric, values: [.values[] | "\(.[0])=\(.[1])"]}' 2>&1
	done >"$OUT/usage-series-$id.txt"
done
curl -fsS --max-time 20 "http://127.0.0.1:$PROM_PORT/api/v1/rules" |
	jq -c '.data.groups[] | select(.name == "jobscope-usage") | {interval, evaluationTime, lastEvaluation}' >"$OUT/usage-rules-health.txt" 2>&1
curl -fsS --max-time 20 "http://127.0.0.1:$PROM_PORT/api/v1/query" --data-urlencode 'query=prometheus_rule_group_iterations_missed_total' |
	jq -c '.data.result[] | {g: .metric.rule_group, v: .value[1]}' >>"$OUT/usage-rules-health.txt" 2>&1

phase_set end
wait_for 300 "c1 done" phase_is c1-end
wait_for 300 "c2 done" phase_is c2-end
# The quietest moment of the run: no job left, the nodes done with their
# checks (their squeue loops stopped), nothing of this script running
# Slurm commands but the heartbeat's squeue (root). What the controller
# unit asks slurmctld over a few poll intervals, by sdiag (rpcbudget.sh:
# 60 to 90 s at the unit's 30 s interval). The node units run as a
# jobscope user too, but run squeue only for jobs they lack metadata of.
rpcbudget_check "$(systemctl show -p MainPID --value jobscope-controller)" "$CTL_PORT"
restd_budget
sleep 10 # the nodes' tables on disk before slurmctld goes
finish
