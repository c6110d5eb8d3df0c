# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# `jobscope report` against the real jobs of test/e2e/run.sh (sourced by it;
# uses its helpers: check_*, row, skip, log, need, wait_for, submit, cg,
# sacct_cpu, promq). report_e2e runs after run.sh's own checks, while its
# jobs still run and Prometheus still scrapes.
#
# carol's two jobs exist for the report alone: a burner that keeps its one
# core busy for its whole life (must not be warned for CPU), and a job
# that sleeps on two cores (must be). Both end, so they are reported as
# finished jobs, their core-hours compared with sacct, and the job-end
# epilog (contrib/slurm/epilog.d/jobscope-report.sh) writes their reports.

REPORT_OUT=$WORK/report

# report_cli ARGS...: jobscope report with the e2e's site configuration,
# as users type it (jobscope runs the jobscope-report next to it).
report_cli() { "$WORK/bin/jobscope" report --config="$WORK/etc/report.yml" --color=never "$@"; }

# jq_report FILE FILTER: a field of a saved JSON report ("absent" if null).
jq_report() { jq -r "($2) | if . == null then \"absent\" else . end" "$1" 2>/dev/null || echo "unreadable"; }

report_setup() {
	install -d -m 0755 "$REPORT_OUT"
	# Readable by the job users, wherever the checkout is; side by side, as
	# the packages install them.
	install -d -m 0755 "$WORK/bin"
	install -m 0755 "$BIN" "$WORK/bin/jobscope"
	install -m 0755 "$REPORT_BIN" "$WORK/bin/jobscope-report"
	# Utilisation warnings for jobs of 10 s and more: the e2e jobs are
	# minutes long, a site's 5-minute default would silence them. The CPU
	# lines sit lower than the defaults because this 2-core machine is
	# shared: a burner that spins all its life has been measured at 38%
	# of its core here while other tests ran, and must still read as busy
	# next to a job that sleeps (0%).
	cat >"$WORK/etc/report.yml" <<EOF
prometheus:
  url: http://127.0.0.1:$PORT_PROM
  timeout: 15s
lookback: 1d
sacct: auto
thresholds:
  min_elapsed: 10s
  cpu_efficiency_low: 0.2
  cpu_efficiency_very_low: 0.05
EOF
	cat >"$WORK/etc/report-epilog.conf" <<EOF
ENABLE=yes
BIN=$WORK/bin/jobscope
CONFIG=$WORK/etc/report.yml
TIMEOUT=60
LOG=$WORK/log/report-epilog.log
EOF
	chmod 0644 "$WORK/etc/report.yml" "$WORK/etc/report-epilog.conf"
	id carol >/dev/null 2>&1 || useradd -m -s /bin/sh carol
	install -d -o carol -m 0755 "$WORK/carol"
	sacctmgr -i add user carol account=physics defaultaccount=physics >/dev/null || die "add carol"
	need 30 "carol's association" sh -c 'scontrol show assoc_mgr users=carol flags=assoc | grep -q "Account=physics"'
	cat >"$WORK/jobs/report-burn.sh" <<'EOF'
#!/bin/sh
timeout 28 sh -c 'while :; do :; done'
sleep 3
EOF
	cat >"$WORK/jobs/report-sleep.sh" <<'EOF'
#!/bin/sh
sleep 120
EOF
	chmod 755 "$WORK/jobs/report-burn.sh" "$WORK/jobs/report-sleep.sh"
}

# report_running: jobs run.sh started and that still run.
report_running() {
	local f=$REPORT_OUT/oom.json peak_cg peak_rep
	if report_cli --format=json "$J_OOM" >"$f" 2>"$REPORT_OUT/oom.err"; then
		check_eq "report: oomer warned OOM killed" yes \
			"$(jq -r 'if any(.warnings[]; .id == "memory_oom_killed") then "yes" else "no" end' "$f")"
		check_eq "report: oomer OOM kills == kernel's" "$OOM_TRUTH" "$(jq_report "$f" '.memory.oom_kills')"
		check_eq "report: oomer is running" true "$(jq_report "$f" '.job.running')"
	else
		row "report: oomer" "a report" "$(head -c 200 "$REPORT_OUT/oom.err")" FAIL
	fi
	f=$REPORT_OUT/holder.json
	if report_cli --format=json "$J_HOLD" >"$f" 2>"$REPORT_OUT/holder.err"; then
		peak_cg=$(cg memory "$J_HOLD" memory.max_usage_in_bytes)
		peak_rep=$(jq_report "$f" '.memory.peak_bytes')
		check_close "report: holder memory peak ~ cgroup max_usage_in_bytes" "$peak_cg" "$peak_rep" 0.02
		check_eq "report: holder requested == --mem=600M" 629145600 "$(jq_report "$f" '.memory.requested_bytes')"
	else
		row "report: holder" "a report" "$(head -c 200 "$REPORT_OUT/holder.err")" FAIL
	fi
	if report_cli --format=html --output="$REPORT_OUT/holder.html" "$J_HOLD" 2>"$REPORT_OUT/holder-html.err"; then
		check_eq "report: HTML page has CPU and memory charts" 2 "$(grep -c '<svg' "$REPORT_OUT/holder.html")"
	else
		row "report: HTML page" "written" "$(head -c 200 "$REPORT_OUT/holder-html.err")" FAIL
	fi
	report_cli 999999 >/dev/null 2>"$REPORT_OUT/unknown.err"
	check_eq "report: unknown job exits 1" 1 "$?"
	report_cli --prometheus.url=http://127.0.0.1:9 "$J_HOLD" >/dev/null 2>&1
	check_eq "report: unreachable Prometheus exits 1" 1 "$?"
}

# report_finished: carol's jobs, after they ended.
report_finished() {
	local f=$REPORT_OUT/burn.json truth got
	report_cli "$R_BURN" >"$REPORT_OUT/burn.txt" 2>&1
	report_cli "$R_SLEEP" >"$REPORT_OUT/sleep.txt" 2>&1
	if report_cli --format=json "$R_BURN" >"$f" 2>"$REPORT_OUT/burn.err"; then
		check_eq "report: finished burner state (after it ended)" "COMPLETED/false" \
			"$(jq_report "$f" '.job.state')/$(jq_report "$f" '.job.running')"
		truth=$(sacct_cpu "$R_BURN")
		got=$(jq_report "$f" '.cpu.used_seconds')
		check_close "report: burner CPU seconds ~ sacct TotalCPU" "$truth" "$got" 0.02
		check_ge "report: burner burned (sacct TotalCPU s)" 5 "$truth"
		check_eq "report: burner not warned for CPU" "" \
			"$(jq -r '[.warnings[].id | select(startswith("cpu_"))] | join(",")' "$f")"
		log "burner: efficiency $(jq_report "$f" '.cpu.efficiency'), warnings $(jq -r '[.warnings[].id] | join(",")' "$f")"
	else
		row "report: finished burner" "a report" "$(head -c 200 "$REPORT_OUT/burn.err")" FAIL
	fi
	f=$REPORT_OUT/sleep.json
	if report_cli --format=json "$R_SLEEP" >"$f" 2>"$REPORT_OUT/sleep.err"; then
		check_eq "report: 2-core sleeper warned for CPU efficiency" yes \
			"$(jq -r 'if any(.warnings[]; .id == "cpu_efficiency_very_low") then "yes" else "no" end' "$f")"
		check_eq "report: 2-core sleeper cores" 2 "$(jq_report "$f" '.cpu.cores')"
	else
		row "report: sleeper" "a report" "$(head -c 200 "$REPORT_OUT/sleep.err")" FAIL
	fi
	# The job-end epilog wrote both reports into carol's working directory.
	for j in $R_BURN $R_SLEEP; do
		wait_for 90 "epilog report $j" sh -c "grep -q '^Job $j' '$WORK/carol/jobscope-$j.txt'" ||
			log "epilog report $j missing; epilog log: $(grep "^job $j:" "$WORK/log/report-epilog.log" 2>/dev/null | tr '\n' ' ')" \
				"reports running: $(pgrep -af 'jobscope-report' | tr '\n' ' ')"
		check_eq "report: epilog wrote $WORK/carol/jobscope-$j.txt as carol" "carol/Job $j" \
			"$(stat -c %U "$WORK/carol/jobscope-$j.txt" 2>/dev/null)/$(head -1 "$WORK/carol/jobscope-$j.txt" 2>/dev/null | cut -d' ' -f1-2)"
	done
}

# report_usage: carol's allocated core-hours from the recording rules
# against sacct's CPUTimeRAW.
report_usage() {
	local f=$REPORT_OUT/usage-carol.json truth got
	truth=$(sacct -u carol -X -n -P -S "$REPORT_T0" -o CPUTimeRAW | awk '{s+=$1} END{printf "%.6f", s/3600}')
	if report_cli --user=carol --since=1h --format=json >"$f" 2>"$REPORT_OUT/usage.err"; then
		got=$(jq_report "$f" '.totals.core_hours')
		check_close "report: carol's core-hours (usage rules) ~ sacct CPUTimeRAW" "$truth" "$got" 0.02
		check_eq "report: usage counts carol's 2 jobs" 2 "$(jq_report "$f" '.totals.jobs')"
		check_eq "report: rule interval from Prometheus's rules API" prometheus "$(jq_report "$f" '.rule_interval_source')"
		report_cli --user=carol --since=1h >"$REPORT_OUT/usage-carol.txt" 2>&1
		report_cli --user=carol --since=1h --format=csv >"$REPORT_OUT/usage-carol.csv" 2>&1
		check_eq "report: usage CSV has a row per job" 3 "$(wc -l <"$REPORT_OUT/usage-carol.csv")"
	else
		row "report: usage of carol" "a summary" "$(head -c 200 "$REPORT_OUT/usage.err")" FAIL
	fi
}

report_e2e() {
	log "jobscope report"
	report_setup
	REPORT_T0=$(date +%Y-%m-%dT%H:%M:%S)
	R_BURN=$(submit carol physics debug report-burn.sh -n1 -c1 --mem=100M -J rburn --chdir="$WORK/carol")
	R_SLEEP=$(submit carol physics debug report-sleep.sh -n1 -c2 --mem=100M -J rsleep --chdir="$WORK/carol")
	[[ $R_BURN =~ ^[0-9]+$ && $R_SLEEP =~ ^[0-9]+$ ]] || die "sbatch for carol failed: '$R_BURN' '$R_SLEEP'"
	log "report jobs: burn=$R_BURN sleep=$R_SLEEP"
	report_running
	need 240 "carol's jobs ended" sh -c "[ -z \"\$(squeue -h -u carol -o %i)\" ]"
	need 60 "carol's jobs in sacct" sh -c "sacct -u carol -X -n -P -S $REPORT_T0 -o State | grep -c COMPLETED | grep -qx 2"
	sleep 3 # staleness markers and the last rule evaluations
	report_finished
	report_usage
	log "report outputs in $REPORT_OUT"
	cat "$REPORT_OUT/sleep.txt" >&2
}
