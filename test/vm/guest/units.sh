# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# Sourced inside a test VM: proof of the shipped systemd units (who they
# run as, with which capabilities, how exposed, what a restart keeps and a
# stop leaves behind). Uses assert.sh, jobscope.sh and checks.sh's $M.

BPF_PIN=/sys/fs/bpf/jobscope
# The programs jobscope loads (bpf/loader.go), as bpftool names them.
BPF_PROGS="account_switch seed_tasks drop_job tag_socket tag_listener count_ingress count_egress"

# unit_caps UNIT-FILE KEY: the capability names of KEY=, sorted, lower case.
unit_caps() {
	sed -n "s/^$2=//p" "$1" | tr ' ' '\n' | grep . | tr 'A-Z' 'a-z' | sort | paste -sd' ' -
}
jobscope_progs() {
	bpftool -j prog show 2>/dev/null | jq -r --arg n "$BPF_PROGS" \
		'($n | split(" ")) as $names | [.[] | select(.name as $x | $names | index($x))] | length'
}

check_node_unit() {
	local pid unit=$SRC/contrib/systemd/jobscope.service score
	check_eq "node unit: active" active "$(systemctl is-active jobscope)"
	check_eq "node unit: User" jobscope "$(systemctl show -P User jobscope)"
	check_eq "node unit: systemctl show AmbientCapabilities" "$(unit_caps "$unit" AmbientCapabilities)" \
		"$(systemctl show -P AmbientCapabilities jobscope | tr ' ' '\n' | grep . | sort | paste -sd' ' -)"
	check_eq "node unit: systemctl show CapabilityBoundingSet" "$(unit_caps "$unit" CapabilityBoundingSet)" \
		"$(systemctl show -P CapabilityBoundingSet jobscope | tr ' ' '\n' | grep . | sort | paste -sd' ' -)"
	pid=$(systemctl show -P MainPID jobscope)
	check_eq "node unit: process uid == jobscope" "$(id -u jobscope)" "$(awk '/^Uid:/{print $2}' "/proc/$pid/status")"
	check_eq "node unit: effective capabilities == AmbientCapabilities" "$(unit_caps "$unit" AmbientCapabilities)" \
		"$(capsh --decode="$(awk '/^CapEff/{print $2}' "/proc/$pid/status")" | sed 's/.*=//' | tr , '\n' | sort | paste -sd' ' -)"
	check_eq "node unit: ebpf collector loaded (journal)" 1 \
		"$(journalctl -u jobscope -b --no-pager -o cat | grep -c 'ebpf collector loaded')"
	check_eq "node unit: no ebpf error in journal" "" \
		"$(journalctl -u jobscope -b --no-pager -o cat | grep -i 'ebpf' | grep -iE 'level=(warn|error)' | head -2 | cut -c1-160 | paste -sd' ' -)"
	check_eq "node unit: pins belong to jobscope" jobscope "$(stat -c %U "$BPF_PIN/job_counters" 2>&1)"
	check_ge "node unit: jobscope's BPF programs loaded (bpftool)" 3 "$(jobscope_progs)"
	systemd-analyze security jobscope --no-pager >"$M/systemd-analyze-security-jobscope.txt" 2>&1
	systemd-analyze security jobscope-controller --no-pager >"$M/systemd-analyze-security-controller.txt" 2>&1
	systemctl show jobscope >"$M/systemctl-show-jobscope.txt"
	systemctl show jobscope-controller >"$M/systemctl-show-controller.txt"
	score=$(grep -o 'Overall exposure level for jobscope.service: [0-9.]*' "$M/systemd-analyze-security-jobscope.txt" | awk '{print $NF}')
	check_ge "node unit: systemd-analyze security score measured" 0 "${score:-none}"
	SCORE_NODE=$score
	SCORE_CTL=$(grep -o 'Overall exposure level for jobscope-controller.service: [0-9.]*' "$M/systemd-analyze-security-controller.txt" | awk '{print $NF}')
}

check_controller_unit() {
	check_eq "controller unit: active" active "$(systemctl is-active jobscope-controller)"
	check_eq "controller unit: User" jobscope "$(systemctl show -P User jobscope-controller)"
	check_eq "controller unit: never restarted (NRestarts)" 0 "$(systemctl show -P NRestarts jobscope-controller)"
	check_eq "controller unit: no SIGSYS kill in journal" 0 \
		"$(journalctl -b --no-pager -o cat -u jobscope-controller | grep -c 'status=31/SYS')"
	check_eq "controller unit: capabilities (CapEff)" 0000000000000000 \
		"$(awk '/^CapEff/{print $2}' "/proc/$(systemctl show -P MainPID jobscope-controller)/status")"
	check_eq "controller unit: serves /metrics" 0 "$(curl -fsS -o /dev/null "http://127.0.0.1:$CTL_PORT/metrics"; echo $?)"
}

# counters FILE: the ebpf collector's per-job counters of a scrape, "series
# value" (per-core CPU, syscall and storage IO, network).
counters() {
	grep -E '^slurm_job_(cpu_core_seconds|io_syscall_bytes|io_syscalls|io_storage_bytes|network_bytes|network_packets)_total\{' "$1" | sort
}

# check_restart: a restart reuses the pinned maps, so no eBPF counter of a
# job goes down. (Counters jobscope keeps in memory, such as the process
# collector's CPU of exited processes, restart as Prometheus counters may.)
check_restart() {
	local pre=$M/pre-restart.txt post=$M/post-restart.txt id_pre id_post drops
	id_pre=$(bpftool -j map show pinned "$BPF_PIN/job_counters" 2>/dev/null | jq -r '.id')
	scrape $NODE_PORT "$pre" || { row "restart: scrape before" "/metrics answers" "no answer" FAIL; return; }
	systemctl restart jobscope
	wait_for 120 "jobscope back" curl -fsS -o /dev/null "http://127.0.0.1:$NODE_PORT/metrics"
	scrape $NODE_PORT "$post" || { row "restart: scrape after" "/metrics answers" "no answer" FAIL; return; }
	id_post=$(bpftool -j map show pinned "$BPF_PIN/job_counters" 2>/dev/null | jq -r '.id')
	check_eq "restart: pinned job_counters map reused (map id)" "$id_pre" "$id_post"
	check_eq "restart: jobscope logged reused_pins=true" 1 \
		"$(journalctl -u jobscope -b --no-pager -o cat | grep 'ebpf collector loaded' | tail -1 | grep -c 'reused_pins=true')"
	# The programs stayed attached through the restart (pinned links) and
	# the new unit took every pinned hook over.
	check_eq "restart: the new unit took over every pinned link (handed_over in its log)" "handed_over=$(ls "$BPF_PIN/links" | wc -l)" \
		"$(journalctl -u jobscope -b --no-pager -o cat | grep 'ebpf collector loaded' | tail -1 | grep -o 'handed_over=[0-9]*' || echo none)"
	drops=$(join -j1 <(counters "$pre" | awk '{print $1, $2}') <(counters "$post" | awk '{print $1, $2}') |
		awk '$3 < $2 {n++; if (n<=3) printf "%s %s->%s; ", $1, $2, $3} END{print n+0}')
	check_eq "restart: no eBPF job counter went down" 0 "${drops##*; }"
	[ "${drops##*; }" = 0 ] || log "counters that dropped: $drops"
	check_ge "restart: counters compared" 20 "$(join -j1 <(counters "$pre" | awk '{print $1}') <(counters "$post" | awk '{print $1}') | wc -l)"
}

jobscope_prog_names() {
	bpftool -j prog show 2>/dev/null | jq -r --arg n "$BPF_PROGS" \
		'($n | split(" ")) as $names | [.[] | select(.name as $x | $names | index($x)) | .name] | join(" ")'
}

# check_stop: a stop leaves the hooked programs attached (their links are
# pinned, so nothing a job does while jobscope is down goes uncounted) and
# frees the rest; removing the pinned links, as the package's removal does,
# detaches them; the pinned maps stay for the next start. The kernel frees a
# program after its last reference goes through RCU and a workqueue, so under
# TCG bpftool can still list one for a moment after the process is gone (CI
# saw 3 right after stop): poll a bounded time, and fail only on a count
# that stays.
check_stop() {
	local left i links
	links=$(ls "$BPF_PIN/links" 2>/dev/null | wc -l)
	systemctl stop jobscope
	for i in $(seq 1 60); do
		left=$(jobscope_progs)
		[ "$left" = "$links" ] && break
		sleep 0.5
	done
	check_ge "stop: pinned links under $BPF_PIN/links" 2 "$links"
	check_eq "stop: jobscope's programs left attached, one per pinned link (within 30 s of stop)" "$links" "$left"
	rm -r "$BPF_PIN/links"
	for i in $(seq 1 60); do
		left=$(jobscope_progs)
		[ "$left" = 0 ] && break
		sleep 0.5
	done
	[ "$left" = 0 ] || log "programs still loaded 30 s after the links went: $(jobscope_prog_names)"
	check_eq "detach (rm -r the pinned links): jobscope's programs left in bpftool prog (within 30 s)" 0 "$left"
	check_eq "stop: pinned maps kept for the next start" yes "$([ -e "$BPF_PIN/job_counters" ] && echo yes || echo no)"
}
