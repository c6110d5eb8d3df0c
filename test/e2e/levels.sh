# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# --metrics.level against the real jobs of test/e2e/run.sh (sourced by it;
# uses its helpers: check_*, row, skip, log, wait_for, scrape, mcount, mnum,
# kill_pidfile). levels_e2e runs after the node checks, which read the
# default (basic) level: it counts the basic level's series per job against
# the budget of docs/cardinality.md, then starts a second node instance at
# --metrics.level=full over the same jobs and checks that the breakdowns
# the basic level leaves out are there.

PORT_FULL=19822

# job_series FILE JOB: the job's series that count against the budget
# (per-core, outside-cpuset, power and GPU series are budgeted apart).
job_series() {
	grep -E '^slurm_job_' "$1" | grep -F "jobid=\"$2\"" |
		grep -cvE '^slurm_job_(cpu_core_seconds_total|cpu_outside_cpuset_seconds_total|energy_joules_total|emissions_grams_total|gpu_)' || true
}

levels_e2e() {
	local j n cores cpus over="" F=$WORK/metrics/node-full.txt
	if ! has_flag metrics.level; then
		skip "metrics levels" "no --metrics.level in this build"
		return
	fi
	for j in "$@"; do
		n=$(job_series "$M" "$j")
		cores=$(mcount "$M" slurm_job_cpu_core_seconds_total "jobid=\"$j\"")
		cpus=$(mnum "$M" slurm_job_cpus "jobid=\"$j\"")
		log "basic level: job $j: $n series + $cores per-core ($cpus cpus)"
		[ "$n" -le 25 ] || over+="$j:$n "
		[ "$cpus" != absent ] && [ "$cores" -gt "$cpus" ] && over+="$j:cores=$cores>$cpus "
	done
	check_eq "basic level: <= 25 series per job + one per allocated core" "" "${over% }"
	check_eq "basic level: block IO summed (no per-device series)" 0 \
		"$(grep -E '^slurm_job_block_io_bytes_total\{' "$M" | grep -vc 'device="all"' || true)"

	install -d -m 0700 "$BPF_PIN_CAP-full"
	setsid "$BIN" --web.listen-address=127.0.0.1:$PORT_FULL --slurm.job-props-dir="$WORK/props" \
		--metrics.level=full --bpf.pin-path="$BPF_PIN_CAP-full" --collector.gpu=false --collector.power=false \
		>"$WORK/log/jobscope-full.log" 2>&1 </dev/null &
	echo $! >"$WORK/run/jobscope-full.pid"
	if ! wait_for 60 "jobscope --metrics.level=full" curl -fsS -o /dev/null "http://127.0.0.1:$PORT_FULL/metrics"; then
		row "full level: instance answers" "/metrics" "no answer" FAIL
		kill_pidfile "$WORK/run/jobscope-full.pid" 5
		return
	fi
	sleep 1 # a second scrape: the first BPF counts settle
	scrape $PORT_FULL "$F" || row "full level: scrape" "ok" "failed" FAIL
	kill_pidfile "$WORK/run/jobscope-full.pid" 5
	check_eq "full level: cgroup and process collectors succeed" "1 1" \
		"$(mnum "$F" jobscope_scrape_collector_success 'collector="cgroup"') $(mnum "$F" jobscope_scrape_collector_success 'collector="process"')"
	check_ge "full level: memory.stat breakdown (holder's types)" 10 "$(mcount "$F" slurm_job_memory_stat_bytes "jobid=\"$J_HOLD\"")"
	check_eq "full level: memory event max (v1 failcnt) for the oomer" 1 "$(mcount "$F" slurm_job_memory_events_total "jobid=\"$J_OOM\"" 'event="max"')"
	check_ge "full level: processes by state (holder)" 5 "$(mcount "$F" slurm_job_processes "jobid=\"$J_HOLD\"")"
	check_ge "full level: CPU per executable (holder)" 1 "$(mcount "$F" slurm_job_process_cpu_seconds_total "jobid=\"$J_HOLD\"")"
	check_eq "full level: no summed block IO series" 0 "$(mcount "$F" slurm_job_block_io_bytes_total 'device="all"')"
	if [ "$(mnum "$F" jobscope_scrape_collector_success 'collector="ebpf"')" = 1 ]; then
		check_eq "full level: ebpf syscall IO beside storage IO" \
			"$(mcount "$F" slurm_job_io_storage_bytes_total)" "$(mcount "$F" slurm_job_io_syscall_bytes_total)"
	fi
	check_ge "full level: more series per job than basic (holder)" "$(($(job_series "$M" "$J_HOLD") + 10))" "$(job_series "$F" "$J_HOLD")"
	check_eq "promtool check metrics (node, full level)" "" "$(promtool check metrics <"$F" 2>&1 | head -3 | tr '\n' ' ')"
}
