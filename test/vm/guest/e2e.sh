#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Inside a test VM (test/vm/run.sh boots it): one-node Slurm under systemd
# with cgroup/v2, jobscope installed as the README says and started with
# systemctl as the jobscope user, the job mix, and assertions against ground
# truth: node mode, controller mode, a real Prometheus, the units. On Slurm
# 26.05 the jobs first run in the SLUID layout, then slurmd restarts with
# CgroupJobIdPaths=yes under a running job. The assertion table goes to
# /payload/out/table.txt; the exit code is the number of failures (capped).
set -uo pipefail

. "$(dirname "$0")/slurm.sh"
OUT=/payload/out
die() {
	log "FATAL: $*"
	row "run reached its end" "no fatal error" "$*" FAIL
	finish
}
. "$HERE/jobscope.sh"
. "$HERE/checks.sh"
. "$HERE/units.sh"
. "$HERE/js1.sh"

finish() {
	{
		echo "VM $VM: Debian $SUITE, kernel $(uname -r), systemd $(systemctl --version | awk 'NR==1{print $2}'), Slurm $(slurmd -V 2>/dev/null | awk '{print $2}'), $(nproc) vCPUs"
		[ -n "${SCORE_NODE:-}" ] && echo "systemd-analyze security: jobscope.service ${SCORE_NODE}, jobscope-controller.service ${SCORE_CTL:-?}"
		print_table
	} >"$OUT/table.txt"
	cat "$OUT/table.txt"
	journalctl -b --no-pager -o short-monotonic -u jobscope >"$OUT/jobscope.log" 2>&1
	journalctl -b --no-pager -o short-monotonic -u jobscope-controller >"$OUT/jobscope-controller.log" 2>&1
	cp /var/log/slurm/*.log "$OUT/" 2>/dev/null
	exit $((FAILS > 99 ? 99 : FAILS))
}

WRITE_MB=100
NET_MB=50
VER=$(slurmd -V | awk '{print $2}')
SLUID_LAYOUT=no
case ${VER%.*} in 2[6-9].*) SLUID_LAYOUT=yes ;; esac
QOS=- # no QOS without slurmdbd
[ "$DBD" = yes ] && QOS=normal
log "Debian $SUITE, kernel $(uname -r), Slurm $VER, slurmdbd $DBD"

# --- Slurm, jobscope, Prometheus ---------------------------------------------

VM_NODE_MEM=2600
write_slurm_conf
install_jobscope_hooks "$SRC"
start_slurm
heartbeat
setup_users
write_jobs
log "slurm up"
install_node_unit
install_controller_unit
need 120 "node unit serves" curl -fsS -o /dev/null "http://127.0.0.1:$NODE_PORT/metrics"
need 60 "controller unit serves" curl -fsS -o /dev/null "http://127.0.0.1:$CTL_PORT/metrics"
start_prometheus
log "jobscope units and prometheus up"

# --- the job mix ------------------------------------------------------------------

J_BURN=$(submit alice physics debug burn.sh -n1 --mem=200M -J burner --export=ALL,BURN_S=20)
J_STEPS=$(submit alice physics debug steps.sh -n2 --mem=200M -J steps --export=ALL,STEP_S=15)
J_HOLD=$(submit bob chemistry batch hold.sh -n1 --mem=600M -J holder)
J_WRITE=$(submit alice chemistry batch write.sh -n1 --mem=300M -J writer --export=ALL,WRITE_MB=$WRITE_MB)
J_OOM=$(submit bob chemistry batch oom.sh -n1 --mem=100M -J oomer)
J_NET=$(submit alice physics batch net.sh -n1 --mem=100M -J network --export=ALL,NET_MB=$NET_MB)
J_ARR=$(submit bob chemistry batch sleep.sh -n1 --mem=50M -J arr --array=1-3)
J_HELD=$(submit alice physics debug sleep.sh -n1 --mem=50M -J held --hold)
for j in J_BURN J_STEPS J_HOLD J_WRITE J_OOM J_NET J_ARR J_HELD; do
	[[ ${!j} =~ ^[0-9]+$ ]] || die "sbatch for $j failed: '${!j}'"
done
# Two short jobs for the summaries (js1.sh), ended before the checks start.
[ "$DBD" = yes ] && js1_submit
log "jobs: burn=$J_BURN steps=$J_STEPS hold=$J_HOLD write=$J_WRITE oom=$J_OOM net=$J_NET arr=$J_ARR held=$J_HELD"
running() { [ "$(job_state "$1")" = RUNNING ]; }
MIX="$J_BURN $J_STEPS $J_HOLD $J_WRITE $J_OOM $J_NET"
all_running() { for j in $MIX; do running "$j" || return 1; done; }
wait_for 240 "the mix running" all_running || for j in $MIX; do running "$j" || log "job $j not running: $(explain_job "$j")"; done
need 120 "holder" out_has "$J_HOLD" holding
need 180 "writer" out_has "$J_WRITE" written
need 120 "oomer" out_has "$J_OOM" "oom rc="
need 180 "network job" out_has "$J_NET" received
need 180 "burner done burning" out_has "$J_BURN" burned
need 180 "steps done" out_has "$J_STEPS" steps-done
[ "$DBD" = yes ] && need 240 "summary jobs ended" js1_ended
log "mix in place"
sleep 6 # a controller poll (5 s) past the last change

# --- node mode, controller mode, Prometheus ---------------------------------------

check_node
check_percore "burner (steps ended)" "$J_BURN" "$M/node-burner.txt"
check_percore "multi-step job (ended steps)" "$J_STEPS" "$M/node-steps.txt"
check_controller
check_prometheus

# A busy thread alone on its core: the rest of the mix idles by now. It
# never leaves its CPU, so per-core is current at a scrape only if the
# running slice is counted.
J_PIN=$(submit alice physics debug pin.sh -n1 -c1 --mem=50M -J pinned --export=ALL,PIN_S=40)
need 120 "pinned job busy" out_has "$J_PIN" pinning
PIN_CPU=$(cgfile "$J_PIN" cpuset.cpus.effective)
isolate_core "$PIN_CPU"
log "pinned job $J_PIN on CPU $PIN_CPU; ${#ISOLATED_UNITS[@]} services moved off it"
for i in 1 2 3; do
	sleep $((i == 1 ? 10 : 8))
	check_percore "pinned busy thread, scrape $i" "$J_PIN" "$M/node-pinned-$i.txt"
done
unisolate

# --- Slurm 26.05: CgroupJobIdPaths=yes, slurmd restarted under running jobs ---------

if [ "$SLUID_LAYOUT" = yes ]; then
	check_eq "SLUID layout: burner's cgroup is its SLUID" "$SCOPE/$(sluid "$J_BURN")" "$(jobdir "$J_BURN")"
	echo "CgroupJobIdPaths=yes" >>"$SLURM_ETC/cgroup.conf"
	systemctl restart slurmd
	need 120 "slurmd back" timeout 60 srun -N1 -n1 --mem=10M -t1 true
	J_NEW=$(submit alice physics debug burn.sh -n1 --mem=100M -J afterrestart --export=ALL,BURN_S=15)
	need 120 "new job burned" out_has "$J_NEW" burned
	check_eq "mixed layout: new job's cgroup is job_<id>" "$SCOPE/job_$J_NEW" "$(jobdir "$J_NEW")"
	check_eq "mixed layout: burner kept its SLUID directory" "$SCOPE/$(sluid "$J_BURN")" "$(jobdir "$J_BURN")"
	f=$M/node-mixed.txt
	scrape $NODE_PORT "$f"
	check_eq "mixed layout: jobscope_jobs == running jobs" "$(squeue -h -t R -w "$NODE" -o %i | wc -l)" "$(mnum "$f" jobscope_jobs)"
	check_job "$f" "$J_BURN" "alice physics debug $QOS burner"
	check_job "$f" "$J_HOLD" "bob chemistry batch $QOS holder"
	check_job "$f" "$J_NEW" "alice physics debug $QOS afterrestart"
	check_percore "mixed layout: job started after the restart" "$J_NEW" "$M/node-new.txt"
	check_percore "mixed layout: burner (ran across the restart)" "$J_BURN" "$M/node-burner-2.txt"
fi

# --- job summaries in Slurm's accounting (slurmdbd only) ---------------------------------

[ "$DBD" = yes ] && js1_check

# --- the units --------------------------------------------------------------------------

check_node_unit
check_controller_unit
check_restart
check_stop
finish
