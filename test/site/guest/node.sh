#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A compute node of the site (c1, c2): slurmd and jobscope's node unit from
# the .deb, the MPI program built here (no shared filesystem), then the
# checks that need this node's cgroupfs: it exports exactly its own jobs,
# and per-core CPU of each agrees with its cpu.stat at the scrape. The
# table goes to /payload/out/table.txt.
set -uo pipefail
. "$(dirname "$0")/common.sh"

net_up
heartbeat
users
write_slurm_conf
start_munge
install_jobscope
install -d -m 0755 /opt/site
mpicc -O2 -o /opt/site/xchg "$HERE/xchg.c" >"$OUT/mpicc.log" 2>&1 || die "mpicc failed: $(tail -3 "$OUT/mpicc.log")"
need 120 "node unit serves" curl -fsS -o /dev/null "http://127.0.0.1:$NODE_PORT/metrics"
check_eq "$NODE: node unit active (postinst enabled it)" active "$(systemctl is-active jobscope)"
# slurmctld on ctl may still be coming up: slurmd retries registering.
systemctl start slurmd || die "slurmd did not start: $(tail -5 /var/log/slurm/slurmd.log)"
log "slurmd up"

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
# ctl's JobscopeDown check: the node unit stops on the node it names.
if [ "$NODE" = c2 ] && phase_wait 900 stop-c2; then
	systemctl stop jobscope
	log "node unit stopped (phase stop-c2)"
fi
phase_wait 1200 end || row "$NODE: ctl ended the run (phase end)" "within 1200 s" "never" FAIL
phase_set "$NODE-end"
finish
