#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A compute node of the site (c1, c2): slurmd and jobscope's node unit from
# the .deb, the MPI program built here (no shared filesystem), then the
# checks that need this node's cgroupfs: it exports exactly its own jobs,
# and per-core CPU of each agrees with its cpu.stat at the scrape. The
# table goes to /payload/out/table.txt.
set -uo pipefail
. "$(dirname "$0")/common.sh"
. "$HERE/upgrade.sh"

net_up
heartbeat
users
write_slurm_conf
start_munge
install_jobscope "$OLD_DEB"
install -d -m 0755 /opt/site
mpicc -O2 -o /opt/site/xchg "$HERE/xchg.c" >"$OUT/mpicc.log" 2>&1 || die "mpicc failed: $(tail -3 "$OUT/mpicc.log")"
need 120 "node unit serves" curl -fsS -o /dev/null "http://127.0.0.1:$NODE_PORT/metrics"
check_eq "$NODE: node unit active (postinst enabled it)" active "$(systemctl is-active jobscope)"
# slurmctld on ctl may still be coming up: slurmd retries registering.
systemctl start slurmd || die "slurmd did not start: $(tail -5 /var/log/slurm/slurmd.log)"
log "slurmd up"

# ctl's upgrade jobs run here now; the earlier .deb gives way to the current.
if phase_wait 1800 upgrade; then
	upgrade_node
else
	row "$NODE: ctl's upgrade jobs in place (phase upgrade)" "within 1800 s" "never" FAIL
fi
phase_set "$NODE-upgraded"

if ! phase_wait 1800 mix; then
	row "$NODE: ctl's job mix in place (phase mix)" "within 1800 s" "never" FAIL
	finish
fi
find_scope
f=$M/$NODE-mix.txt
scrape $NODE_PORT "$f" || die "scrape of the node unit failed"
want=$(squeue -h -t R -w "$NODE" -o %A | sort -n | paste -sd, -)
got=$(grep -E '^slurm_job_info\{' "$f" | sed -n 's/.*[{,]jobid="\([0-9]*\)".*/\1/p' | sort -un | paste -sd, -)
check_eq "$NODE exports exactly its running jobs (squeue -w $NODE)" "$want" "$got"
for j in $(squeue -h -t R -w "$NODE" -o %A); do
	check_percore "$NODE job $j ($(squeue -h -j "$j" -o %j | head -1))" "$j" "$M/$NODE-percore-$j.txt"
done
phase_set "$NODE-checked"
# ctl's alert checks. JobscopeDown: the node unit stops on c2, and starts
# again when ctl has seen the alert.
if [ "$NODE" = c2 ] && phase_wait 900 stop-c2; then
	systemctl stop jobscope
	log "node unit stopped (phase stop-c2)"
	phase_wait 600 start-c2 || row "c2: ctl saw JobscopeDown (phase start-c2)" "within 600 s" never FAIL
	systemctl start jobscope
	wait_for 120 "node unit serves" curl -fsS -o /dev/null "http://127.0.0.1:$NODE_PORT/metrics"
	check_eq "c2: node unit serves again after its stop" active "$(systemctl is-active jobscope)"
fi
# JobscopeJobsNotDiscovered: c1's unit is blinded to its job cgroups the
# way a site can misconfigure it (a --path.cgroupfs in ARGS that holds no
# cgroup hierarchy); it keeps serving, and once the setting is restored
# it exports its jobs again.
if [ "$NODE" = c1 ] && phase_wait 900 blind-c1; then
	blind_node
	phase_set c1-blind
	phase_wait 600 unblind-c1 || row "c1: ctl saw JobscopeJobsNotDiscovered (phase unblind-c1)" "within 600 s" never FAIL
	unblind_node
	phase_set c1-unblind
fi
# ctl ends the MPI job next: what its job cgroup holds (tasks and
# slurmstepd) just before, for ctl's report check.
if phase_wait 900 stepd; then
	j=$(squeue -h -n mpi -t R -w "$NODE" -o %A | head -1)
	phase_set "$NODE-jobusec-$(awk '$1 == "usage_usec" {print $2}' "$(jobdir "$j")/cpu.stat" 2>/dev/null)"
fi
phase_wait 1200 end || row "$NODE: ctl ended the run (phase end)" "within 1200 s" "never" FAIL
phase_set "$NODE-end"
finish
