#!/usr/bin/env bash
# Inside VM C (Slurm 26.05): the load jobscope's controller mode and
# slurmctld's own metrics endpoint put on slurmctld (issue 13), measured with
# sdiag's RPC statistics per user and per message type. Not an assertion run:
#
#   JOBSCOPE_VM_ENTRY=rpcload.sh test/vm/run.sh C
#
# Three phases of RPC_POLLS (10) intervals of RPC_INTERVAL (15) seconds each,
# on one cluster with a queue (running and pending jobs), sdiag --reset
# before each and sdiag read at its end:
#   idle     nothing scrapes: what slurmd, the jobs and the prolog ask anyway
#   jobscope the controller unit, --slurm.poll-interval=RPC_INTERVAL, default
#            collectors (sacct included), 20 concurrent scrapers each
#            scraping /metrics once a second
#   native   slurmctld's MetricsType=metrics/openmetrics endpoint, its five
#            paths scraped every RPC_INTERVAL by two Prometheus servers
# The raw sdiag outputs and a summary (out/table.txt) come back on the
# payload disk. Not yet run: written in session 3, when no VM time was left.
set -uo pipefail
. "$(dirname "$0")/slurm.sh"
. "$HERE/jobscope.sh"
OUT=/payload/out
INTERVAL=${RPC_INTERVAL:-15}
POLLS=${RPC_POLLS:-10}
SCRAPERS=20
WINDOW=$((INTERVAL * POLLS))

VM_NODE_MEM=2600
write_slurm_conf "MetricsType=metrics/openmetrics"
install_jobscope_hooks "$SRC"
start_slurm
heartbeat
setup_users
# A queue to report on: four one-core jobs run (4 vCPUs), four wait.
for i in 1 2 3 4 5 6 7 8; do
	runuser -u alice -- sbatch -Q -A physics -p debug -t 25 -c 2 -o /dev/null --wrap 'sleep 1500' || die "sbatch"
done
need 60 "jobs running" sh -c '[ "$(squeue -h -t R | wc -l)" -ge 1 ]'
log "queue: $(squeue -h -o %T | sort | uniq -c | paste -sd' ' -)"

# phase NAME: sdiag --reset, WINDOW seconds, sdiag into out/sdiag-NAME.txt.
phase() {
	sdiag --reset >/dev/null || die "sdiag --reset"
	log "phase $1: $WINDOW s"
	sleep "$WINDOW"
	sdiag >"$OUT/sdiag-$1.txt" || die "sdiag"
}

phase idle

# jobscope: the shipped controller unit, poll interval set to the window's.
id jobscope >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin jobscope
install -m 0755 "$SRC/bin/jobscope" /usr/bin/jobscope
install -m 0644 "$SRC/contrib/systemd/jobscope-controller.service" "$UNIT_DIR/"
mkdir -p "$UNIT_DIR/jobscope-controller.service.d"
printf '[Service]\nExecStart=\nExecStart=%s --slurm.poll-interval=%ss\n' \
	"$(unit_execstart "$SRC/contrib/systemd/jobscope-controller.service")" "$INTERVAL" \
	>"$UNIT_DIR/jobscope-controller.service.d/vmtest.conf"
systemctl daemon-reload && systemctl start jobscope-controller
need 60 "controller unit serves" curl -fsS -o /dev/null "http://127.0.0.1:$CTL_PORT/metrics"
sleep 2
pids=()
mkdir -p /var/tmp/scrapes
for i in $(seq "$SCRAPERS"); do
	(while :; do curl -fsS -o /dev/null --max-time 30 "http://127.0.0.1:$CTL_PORT/metrics" && echo >>"/var/tmp/scrapes/$i"; sleep 1; done) &
	pids+=($!)
done
phase jobscope
kill "${pids[@]}" 2>/dev/null
wait "${pids[@]}" 2>/dev/null
SCRAPES=$(cat /var/tmp/scrapes/* | wc -l)
curl -fsS "http://127.0.0.1:$CTL_PORT/metrics" >"$OUT/jobscope-metrics.txt"
systemctl stop jobscope-controller

# native: two Prometheus servers, each scraping the five paths.
for p in 1 2; do
	install -d -m 0755 "/var/tmp/prom$p"
	chown prometheus "/var/tmp/prom$p"
	{
		printf 'global:\n  scrape_interval: %ss\n  scrape_timeout: 10s\nscrape_configs:\n' "$INTERVAL"
		for e in jobs nodes partitions scheduler jobs-users-accts; do
			printf '  - job_name: native-%s\n    metrics_path: /metrics/%s\n    static_configs:\n      - targets: [%s:6817]\n' "$e" "$e" "$NODE"
		done
	} >"/etc/vmtest-prom$p.yml"
	systemd-run --unit="vmtest-prom$p" -p User=prometheus /usr/bin/prometheus --config.file="/etc/vmtest-prom$p.yml" \
		--storage.tsdb.path="/var/tmp/prom$p" --web.listen-address="127.0.0.1:$((9090 + p))" >/dev/null || die "prometheus $p"
	need 60 "prometheus $p" curl -fsS -o /dev/null "http://127.0.0.1:$((9090 + p))/-/ready"
done
phase native
NATIVE_UP=$(curl -fsS "http://127.0.0.1:9091/api/v1/query" --data-urlencode 'query=sum(up)' | jq -r '.data.result[0].value[1]')
NATIVE_SCRAPES=$(curl -fsS "http://127.0.0.1:9091/api/v1/query" --data-urlencode "query=sum(count_over_time(up[${WINDOW}s]))" | jq -r '.data.result[0].value[1]')
systemctl stop vmtest-prom1 vmtest-prom2

# rpcs FILE SECTION: "name count total_time_us" for each line of the
# section of sdiag's output that starts with SECTION.
rpcs() {
	awk -v sec="$2" '
		index($0, sec) == 1 { on = 1; next }
		on && /^Remote Procedure Call|^Pending RPC/ { on = 0 }
		on && /count:/ {
			n = $1; c = $0; sub(/.*count:/, "", c); sub(/ .*/, "", c)
			t = $0; sub(/.*total_time:/, "", t); sub(/ .*/, "", t)
			print n, c, t
		}' "$1"
}
{
	echo "VM $VM: Slurm $(slurmd -V | awk '{print $2}'), $(nproc) vCPUs; RPCs seen by slurmctld (sdiag) over $POLLS intervals of $INTERVAL s each"
	echo "queue: $(squeue -h -o %T | sort | uniq -c | paste -sd' ' -)"
	echo "jobscope phase: $SCRAPERS scrapers, $SCRAPES scrapes of /metrics in all; native phase: 2 Prometheus x 5 paths, up=$NATIVE_UP on the first, $NATIVE_SCRAPES scrapes by it"
	for ph in idle jobscope native; do
		echo
		echo "== $ph: by user (count, total time us)"
		rpcs "$OUT/sdiag-$ph.txt" "Remote Procedure Call statistics by user"
		echo "== $ph: by message type (count, total time us)"
		rpcs "$OUT/sdiag-$ph.txt" "Remote Procedure Call statistics by message type"
	done
} >"$OUT/table.txt"
cat "$OUT/table.txt"
cp /var/log/slurm/slurmctld.log "$OUT/" 2>/dev/null
exit 0
