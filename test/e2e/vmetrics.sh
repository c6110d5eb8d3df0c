# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# `jobscope report` against VictoriaMetrics (sourced by test/e2e/run.sh;
# uses its helpers: check_*, row, skip, log, need, wait_for, kill_pidfile,
# and report.sh's report_cli, jq_report, R_BURN, REPORT_OUT).
#
# vmetrics_setup starts Debian's victoria-metrics with its default flags
# (only where it stores and listens) and has the e2e Prometheus
# remote_write every sample into it, its rule results included, so both
# stores hold the same samples. vmetrics_e2e, after report_e2e, reads the
# finished burner's report and carol's usage summary from both and
# compares them field by field.

PORT_VM=19836
VM_URL=http://127.0.0.1:$PORT_VM

vmetrics_setup() {
	command -v victoria-metrics >/dev/null || return 0
	install -d "$WORK/vm"
	setsid victoria-metrics -storageDataPath="$WORK/vm" -httpListenAddr=127.0.0.1:$PORT_VM \
		>"$WORK/log/victoria-metrics.log" 2>&1 </dev/null &
	echo $! >"$WORK/run/victoria-metrics.pid"
	need 30 victoria-metrics curl -fsS -o /dev/null "$VM_URL/health"
	cat >>"$WORK/etc/prometheus.yml" <<EOF2
remote_write:
  - url: $VM_URL/api/v1/write
EOF2
	kill -HUP "$(cat "$WORK/run/prometheus.pid")"
	need 30 "prometheus remote_write to victoria-metrics" sh -c \
		"curl -fsS 'http://127.0.0.1:$PORT_PROM/api/v1/status/config' | grep -q 'remote_write'"
}

# vm_flat FILE: one "path<TAB>value" line per scalar of a JSON document,
# without what may differ by design: when it was generated, the charts'
# points (MetricsQL's rate() does not extrapolate; docs/report.md, Stores),
# and the usage summary's rule-interval source and notes (VictoriaMetrics
# has no rules API: the interval comes from the configuration, set equal).
vm_flat() {
	jq -r 'del(.generated_at, .rule_interval_source, .notes) | .charts |= (if . == null then . else map(.id) end)
		| paths(scalars) as $p | [($p | map(tostring) | join(".")), (getpath($p) | tostring)] | @tsv' "$1"
}

# vm_compare NAME PROM.json VM.json: every field equal, numbers to 1e-9
# relative, but means from subqueries (mean_bytes) to 2%: each store
# places the subquery's steps on its own grid, so one step more or less
# of a job's few dozen can fall in the mean.
vm_compare() {
	local name=$1 diffs
	diffs=$(join -t $'\t' -a1 -a2 -e MISSING -o 0,1.2,2.2 <(vm_flat "$2" | sort) <(vm_flat "$3" | sort) |
		awk -F'\t' '
		function num(s) { return s ~ /^-?[0-9.]+([eE][-+]?[0-9]+)?$/ }
		{
			tol = ($1 ~ /mean_bytes$/) ? 0.02 : 1e-9
			if ($2 == $3) next
			if (num($2) && num($3)) { d = $2 - $3; if (d < 0) d = -d; m = ($2 < 0 ? -$2 : $2); if (d <= tol * m) next }
			printf "%s: %s vs %s; ", $1, $2, $3
		}')
	check_eq "vmetrics: $name equal from Prometheus and VictoriaMetrics" "" "$diffs"
}

vmetrics_e2e() {
	local cfg=$WORK/etc/report-vm.yml iv until n
	if ! [ -f "$WORK/run/victoria-metrics.pid" ]; then
		skip "vmetrics: report from VictoriaMetrics" "victoria-metrics not installed"
		return
	fi
	log "jobscope report against VictoriaMetrics"
	iv=$(curl -fsS "http://127.0.0.1:$PORT_PROM/api/v1/rules" | jq -r '.data.groups[] | select(.name == "jobscope-usage") | .interval')
	sed "s#http://127.0.0.1:$PORT_PROM#$VM_URL#" "$WORK/etc/report.yml" >"$cfg"
	printf 'usage:\n  rule_interval: %ss\n' "${iv:-15}" >>"$cfg"
	# A fixed end for both summaries, and VictoriaMetrics given the time
	# to receive it: remote_write sends in batches, seconds behind.
	until=$(date -d "@$(($(date +%s) - 5))" +%Y-%m-%dT%H:%M:%S)
	wait_for 30 "victoria-metrics caught up" sh -c "[ \"\$(curl -fsS '$VM_URL/api/v1/query' --data-urlencode 'query=max(timestamp(up))' -d nocache=1 |
		jq -r '.data.result[0].value[1] // 0 | tonumber | floor')\" -ge $(date -d "$until" +%s) ]"
	report_cli --format=json "$R_BURN" >"$REPORT_OUT/burn-prom.json" 2>"$REPORT_OUT/burn-prom.err"
	"$WORK/bin/jobscope" report --config="$cfg" --color=never --format=json "$R_BURN" \
		>"$REPORT_OUT/burn-vm.json" 2>"$REPORT_OUT/burn-vm.err" || row "vmetrics: report of $R_BURN" "a report" "$(head -c 300 "$REPORT_OUT/burn-vm.err")" FAIL
	check_eq "vmetrics: burner report from VictoriaMetrics, finished" "COMPLETED/false" \
		"$(jq_report "$REPORT_OUT/burn-vm.json" '.job.state')/$(jq_report "$REPORT_OUT/burn-vm.json" '.job.running')"
	vm_compare "report of job $R_BURN" "$REPORT_OUT/burn-prom.json" "$REPORT_OUT/burn-vm.json"
	report_cli --user=carol --since=1h --until="$until" --format=json >"$REPORT_OUT/usage-prom.json" 2>"$REPORT_OUT/usage-prom.err"
	"$WORK/bin/jobscope" report --config="$cfg" --color=never --user=carol --since=1h --until="$until" --format=json \
		>"$REPORT_OUT/usage-vm.json" 2>"$REPORT_OUT/usage-vm.err" || row "vmetrics: usage of carol" "a summary" "$(head -c 300 "$REPORT_OUT/usage-vm.err")" FAIL
	n=$(jq_report "$REPORT_OUT/usage-vm.json" '.totals.jobs')
	check_eq "vmetrics: usage from VictoriaMetrics counts carol's 2 jobs" 2 "$n"
	vm_compare "usage of carol" "$REPORT_OUT/usage-prom.json" "$REPORT_OUT/usage-vm.json"
	kill_pidfile "$WORK/run/victoria-metrics.pid" 5
}
