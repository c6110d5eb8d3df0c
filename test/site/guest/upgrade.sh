# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# Sourced by node.sh: the upgrade of a compute node's jobscope while jobs
# run. The node starts on the earlier commit's .deb; at ctl's phase
# "upgrade" it installs the current one (upgrade_jobscope, common.sh)
# while a sampler scrapes the unit every second. The jobs' CPU counters
# (per core from the ebpf collector's pinned maps, and the cgroup's total)
# must never go down across the restart, must agree with cpu.stat after
# it, and the maps pinned under the pin path must be the same maps (ids)
# after it: a new map would restart every per-core counter from 0. The
# programs stay attached throughout (pinned links, handed over to the new
# unit): the jobs' short tasks that start and end while the unit restarts
# are counted.

PIN_DIR=/sys/fs/bpf/jobscope

# pin_ids: "pin=map id,..." of the maps pinned under PIN_DIR.
pin_ids() {
	local f id
	for f in "$PIN_DIR"/*; do
		[ -e "$f" ] || continue
		id=$(bpftool -j map show pinned "$f" 2>/dev/null | jq -r '.id // empty')
		[ -n "$id" ] && printf '%s=%s\n' "${f##*/}" "$id"
	done | sort | paste -sd, -
}

# cpu_sample FILE: one scrape as "version" and "metric jobid core value"
# lines for the jobs of UPG_JOBS (a regex); an unanswered scrape writes
# "down".
cpu_sample() {
	local t
	# A scrape takes seconds under TCG: a short limit made every sample "down".
	t=$(curl -fsS --max-time 30 "http://127.0.0.1:$NODE_PORT/metrics" 2>/dev/null) || { echo down >"$1"; return; }
	{
		grep '^jobscope_build_info{' <<<"$t" | sed -n 's/.*[{,]version="\([^"]*\)".*/version \1/p'
		grep -E '^slurm_job_cpu_(core|usage)_seconds_total\{' <<<"$t" | grep -E "jobid=\"($UPG_JOBS)\"" |
			awk '{ m = $1; sub(/\{.*/, "", m); j = $1; sub(/.*jobid="/, "", j); sub(/".*/, "", j)
				c = "-"; if ($1 ~ /core="/) { c = $1; sub(/.*core="/, "", c); sub(/".*/, "", c) }
				print m, j, c, $NF }'
	} >"$1"
}

# decreases DIR: each counter that went down from one sample to a later
# one ("metric job core: old -> new"), in sample order.
decreases() {
	cat "$1"/s-*.txt | awk '$1 != "version" && $1 != "down" {
		k = $1 " " $2 " core " $3
		if ((k in last) && $4 + 0 < last[k] + 0) print k ": " last[k] " -> " $4
		last[k] = $4 }' | head -5 | paste -sd';' -
}

upgrade_node() {
	local jobs d=$M/upgrade n=0 sampler j before after old new down
	jobs=$(squeue -h -t R -w "$NODE" -o %A | sort -n)
	[ -n "$jobs" ] || { row "$NODE: jobs running at the upgrade" "at least one" none FAIL; return; }
	UPG_JOBS=$(paste -sd'|' - <<<"$jobs")
	find_scope
	for j in $jobs; do check_percore "$NODE before the upgrade: job $j" "$j" "$M/$NODE-pre-upgrade-$j.txt"; done
	mkdir -p "$d"
	before=$(pin_ids)
	check_eq "$NODE: maps pinned under $PIN_DIR before the upgrade" yes "$([ -n "$before" ] && echo yes || echo "no ($(ls "$PIN_DIR" 2>&1 | paste -sd' ' -))")"
	# The programs stay attached while the unit restarts (pinned links).
	check_eq "$NODE: the programs' links pinned before the upgrade" yes \
		"$([ -e "$PIN_DIR/links/sched_switch" ] && echo yes || echo "no ($(ls "$PIN_DIR/links" 2>&1 | paste -sd' ' -))")"
	local since
	since=$(date '+%Y-%m-%d %H:%M:%S')
	(while :; do n=$((n + 1)); cpu_sample "$(printf '%s/s-%05d.txt' "$d" "$n")"; sleep 1; done) &
	sampler=$!
	wait_for 60 "two samples" sh -c "[ \$(ls $d | wc -l) -ge 2 ]"
	upgrade_jobscope "$NODE_PORT"
	sleep 5
	kill "$sampler"
	wait "$sampler" 2>/dev/null
	after=$(pin_ids)
	log "upgrade: maps before $before, after $after"
	check_eq "$NODE: pinned maps reused across the upgrade (bpftool map ids)" "$before" "$after"
	check_eq "$NODE: the new unit took the attached programs over (journal)" yes \
		"$(journalctl -u jobscope --since "$since" --no-pager 2>/dev/null | grep -q 'took over the programs a previous run left attached' && echo yes || echo no)"
	# One sched_switch program left: the old link was let go of after the
	# handover, not left running beside the new one.
	check_eq "$NODE: one account_switch program after the handover (bpftool)" 1 \
		"$(bpftool -j prog show 2>/dev/null | jq '[.[] | select(.name == "account_switch")] | length')"
	old=$(cat "$d"/s-*.txt | grep -c "^version ${OLD_VERSION//./\\.}$")
	new=$(cat "$d"/s-*.txt | grep -c "^version ${NEW_VERSION//./\\.}$")
	down=$(cat "$d"/s-*.txt | grep -c '^down$')
	log "upgrade: $old samples of $OLD_VERSION, $down unanswered, $new of $NEW_VERSION"
	check_eq "$NODE: the sampler saw both versions" yes "$([ "$old" -ge 1 ] && [ "$new" -ge 1 ] && echo yes || echo "no ($old old, $new new)")"
	check_eq "$NODE: jobs' CPU counters never decrease across the upgrade ($old+$down+$new scrapes)" "" "$(decreases "$d")"
	for j in $jobs; do check_percore "$NODE after the upgrade: job $j" "$j" "$M/$NODE-post-upgrade-$j.txt"; done
}

# blind_node: ARGS="--path.cgroupfs=<an empty directory>" in
# /etc/default/jobscope and a restart; the unit must keep serving, with its
# cgroup collector failing (the branch of JobscopeJobsNotDiscovered that
# carries collector="cgroup") and no job exported.
blind_node() {
	local f=$M/$NODE-blind.txt
	install -d -m 0755 /var/lib/site-empty-cgroupfs
	cp /etc/default/jobscope /root/jobscope.default.site
	sed -i 's|^ARGS=.*|ARGS="--path.cgroupfs=/var/lib/site-empty-cgroupfs"|' /etc/default/jobscope
	systemctl restart jobscope
	wait_for 120 "blind unit serves" scrape "$NODE_PORT" "$f"
	scrape "$NODE_PORT" "$f" || { row "$NODE blind: unit serves" "/metrics answers" "no answer ($(systemctl is-active jobscope))" FAIL; return; }
	check_eq "$NODE blind: cgroup collector fails (success 0)" 0 "$(mnum "$f" jobscope_scrape_collector_success 'collector="cgroup"')"
	check_eq "$NODE blind: no job exported" 0 "$(mcount "$f" slurm_job_info)"
	log "blind: $(grep -E '^jobscope_collector_errors_total\{.*collector="cgroup"' "$f" | paste -sd' ' -)"
}

# unblind_node: the site's setting back, a restart, and the node's jobs
# exported again.
unblind_node() {
	local f=$M/$NODE-unblind.txt want got
	cp /root/jobscope.default.site /etc/default/jobscope
	systemctl restart jobscope
	wait_for 120 "unit serves" scrape "$NODE_PORT" "$f"
	sleep 2
	scrape "$NODE_PORT" "$f" || { row "$NODE unblind: unit serves" "/metrics answers" "no answer" FAIL; return; }
	want=$(squeue -h -t R -w "$NODE" -o %A | sort -n | paste -sd, -)
	got=$(grep -E '^slurm_job_info\{' "$f" | sed -n 's/.*[{,]jobid="\([0-9]*\)".*/\1/p' | sort -un | paste -sd, -)
	check_eq "$NODE unblind: exports its running jobs again" "$want" "$got"
}
