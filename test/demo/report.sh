#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# `make demo-report`: the demo node (test/demo/node.sh), scraped every second
# by Debian's Prometheus in a temporary directory on 127.0.0.1, then
# `jobscope report JOB` with the shipped defaults. Everything it starts is
# stopped when it ends, whatever the way.
#   test/demo/report.sh JOB ROOT EXPORTER_ADDR JOBSCOPE [FLAGS...]
# DEMO_PROM_ADDR (127.0.0.1:10890): Prometheus; DEMO_REPORT_SCRAPES (20):
# scrapes of the job to wait for before the report.
set -euo pipefail
job=$1 root=$2 addr=$3 bin=$4
shift 4
prom_addr=${DEMO_PROM_ADDR:-127.0.0.1:10890}
scrapes=${DEMO_REPORT_SCRAPES:-20}

if ! command -v prometheus >/dev/null; then
	if [ "$(id -u)" = 0 ]; then
		echo "demo-report: installing Debian's prometheus package (apt-get install prometheus)"
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus >/dev/null
	else
		echo "demo-report: needs Prometheus: as root, apt-get install prometheus (Debian 12 or later)" >&2
		exit 1
	fi
fi
command -v curl >/dev/null || { echo "demo-report: needs curl (apt-get install curl)" >&2; exit 1; }
for a in "$addr" "$prom_addr"; do
	if curl -s -o /dev/null --max-time 1 "http://$a/"; then
		echo "demo-report: $a is in use (a make demo still running?); set DEMO_ADDR or DEMO_PROM_ADDR" >&2
		exit 1
	fi
done

tmp=$(mktemp -d /tmp/jobscope-demo-report.XXXXXX)
pids=()
cleanup() {
	# Each was started in its own session: the whole group goes.
	for p in "${pids[@]}"; do kill -TERM -- "-$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# wait_for DESC CMD...: up to 30 s for CMD to succeed.
wait_for() {
	local desc=$1
	shift
	for _ in $(seq 150); do
		"$@" >/dev/null 2>&1 && return 0
		sleep 0.2
	done
	echo "demo-report: $desc did not come up within 30 s (logs: $tmp/*.log)" >&2
	tail -n 20 "$tmp"/*.log >&2 || true
	exit 1
}

start=$SECONDS
setsid bash test/demo/node.sh "$root" "$bin" "$@" >"$tmp/jobscope.log" 2>&1 &
pids+=($!)
wait_for "the demo exporter at $addr" curl -sf --max-time 2 "http://$addr/metrics"

cat >"$tmp/prometheus.yml" <<EOC
# jobscope demo: a throw-away Prometheus for make demo-report (test/demo/report.sh).
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: jobscope-demo
    static_configs:
      - targets: ['$addr']
EOC
setsid prometheus --config.file="$tmp/prometheus.yml" --storage.tsdb.path="$tmp/data" \
	--web.listen-address="$prom_addr" --log.level=warn >"$tmp/prometheus.log" 2>&1 &
pids+=($!)
wait_for "Prometheus at $prom_addr" curl -sf --max-time 2 "http://$prom_addr/-/ready"

# History: the job's energy counter sampled $scrapes times (it moves from the
# second scrape on; CPU time and memory cover the job's whole hour already).
query="count_over_time(slurm_job_energy_joules_total{jobid=\"$job\",source=\"ipmi\"}[10m])"
have_scrapes() {
	local n
	n=$(curl -sf --max-time 2 "http://$prom_addr/api/v1/query" --data-urlencode "query=$query" |
		sed -n 's/.*"value":\[[0-9.]*,"\([0-9]*\)"\].*/\1/p')
	[ "${n:-0}" -ge "$scrapes" ]
}
echo "demo-report: Prometheus at http://$prom_addr is scraping the demo node every second; waiting for $scrapes scrapes"
for _ in $(seq $((scrapes * 3 + 30))); do
	have_scrapes && break
	sleep 1
done
have_scrapes || { echo "demo-report: fewer than $scrapes scrapes of job $job after $((scrapes * 3 + 30)) s" >&2; exit 1; }

# An empty configuration is the shipped defaults; the demo has no Slurm to ask.
: >"$tmp/report.yml"
echo "demo-report: bin/jobscope report $job (demo data: the simulated node in testdata/demo)"
echo
"$bin" report --config="$tmp/report.yml" --prometheus.url="http://$prom_addr" --sacct=never "$job"
echo
echo "demo-report: CPU, memory and IO cover the job's whole hour (cgroup counters); energy only the $scrapes s"
echo "jobscope watched it (its per-job energy counters start with the exporter, docs/energy.md)."
echo "demo-report: took $((SECONDS - start)) s from the exporter's start to the report"
