#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Inside VM C (Slurm 26.05): the load jobscope's controller mode and
# slurmctld's own metrics endpoint put on slurmctld (issue 13), measured with
# sdiag's RPC statistics per user and per message type, and with slurmctld's
# CPU time from its cgroup. A measurement, not an assertion run, made by
# hand:
#
#   JOBSCOPE_VM_ENTRY=rpcload.sh test/vm/run.sh C
#
# Its short form runs in CI and asserts: test/site/guest/rpcbudget.sh, at
# the end of the site's ctl VM (make site-e2e), counts the controller
# unit's RPCs by sdiag over a few poll intervals against the documented
# per-run table (docs/controller.md).
#
# (RPC_POLLS=2 in the host's environment makes a short trial run; run.sh
# passes RPC_POLLS and RPC_INTERVAL into the guest.) Three phases of
# RPC_POLLS (10) intervals of RPC_INTERVAL (15) seconds each, on one cluster
# with a queue (running and pending jobs), sdiag --reset at the start of each
# and sdiag read at its end:
#   idle     nothing scrapes: what slurmd, slurmdbd, the jobs and this
#            script's own sdiag calls ask anyway (the baseline)
#   jobscope the shipped controller unit, --slurm.poll-interval=RPC_INTERVAL,
#            default collectors, 20 concurrent scrapers each scraping
#            /metrics once a second
#   native   slurmctld's MetricsType=metrics/openmetrics endpoint, its five
#            paths scraped every RPC_INTERVAL by two Prometheus servers
# The raw sdiag outputs, the native endpoint's answers and the summary
# (out/table.txt) come back on the payload disk.
set -uo pipefail
. "$(dirname "$0")/slurm.sh"
. "$HERE/jobscope.sh"
OUT=/payload/out
INTERVAL=${RPC_INTERVAL:-15}
POLLS=${RPC_POLLS:-10}
SCRAPERS=20
WINDOW=$((INTERVAL * POLLS))
NATIVE_PATHS="jobs nodes partitions scheduler jobs-users-accts"

VM_NODE_MEM=2600
write_slurm_conf "MetricsType=metrics/openmetrics"
install_jobscope_hooks "$SRC"
start_slurm
heartbeat
setup_users
# A queue to report on: 600 MB each, so four jobs fit in the node's 2600 MB
# and four wait for memory (the partitions share cores).
for i in 1 2 3 4 5 6 7 8; do
	runuser -u alice -- sbatch -Q -A physics -p debug -t 25 -c 1 --mem=600M -o /dev/null --wrap 'sleep 1500' || die "sbatch $i"
done
need 90 "jobs running" sh -c '[ "$(squeue -h -t R | wc -l)" -ge 1 ]'
log "queue: $(squeue -h -o %T | sort | uniq -c | paste -sd' ' -)"

# cpu_us UNIT: the unit's CPU time so far (cgroup v2 cpu.stat), microseconds.
cpu_us() { awk '$1 == "usage_usec" {print $2}' "/sys/fs/cgroup/system.slice/$1/cpu.stat" 2>/dev/null || echo 0; }
# ctl_runs: jobscope's own count of the Slurm commands it ran, by command.
ctl_runs() {
	curl -fsS --max-time 60 "http://127.0.0.1:$CTL_PORT/metrics" |
		awk '/^jobscope_slurm_command_runs_total/ {sub(/.*command="/, ""); sub(/"}/, ""); print}'
}

# phase NAME: sdiag --reset, WINDOW seconds, sdiag into out/sdiag-NAME.txt,
# slurmdbd's own RPC statistics into out/dbd-NAME.txt, slurmctld's and
# slurmdbd's CPU time over the window into out/cpu-NAME.txt.
phase() {
	local c0 d0 c1 d1
	sacctmgr -i clear stats >/dev/null || log "sacctmgr clear stats failed"
	sdiag --reset >/dev/null || die "sdiag --reset"
	c0=$(cpu_us slurmctld.service) d0=$(cpu_us slurmdbd.service)
	log "phase $1: $WINDOW s"
	sleep "$WINDOW"
	sdiag >"$OUT/sdiag-$1.txt" || die "sdiag"
	sacctmgr show stats >"$OUT/dbd-$1.txt" 2>&1
	c1=$(cpu_us slurmctld.service) d1=$(cpu_us slurmdbd.service)
	echo "$((c1 - c0)) $((d1 - d0))" >"$OUT/cpu-$1.txt"
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
ctl_runs >"$OUT/jobscope-runs-before.txt"
phase jobscope
ctl_runs >"$OUT/jobscope-runs-after.txt"
kill "${pids[@]}" 2>/dev/null
wait "${pids[@]}" 2>/dev/null
SCRAPES=$(cat /var/tmp/scrapes/* | wc -l)
curl -fsS "http://127.0.0.1:$CTL_PORT/metrics" >"$OUT/jobscope-metrics.txt"
journalctl -b --no-pager -o short-monotonic -u jobscope-controller >"$OUT/jobscope-controller.log" 2>&1
systemctl stop jobscope-controller

# The native endpoint as a scraper sees it: status, size, first lines.
for e in $NATIVE_PATHS; do
	code=$(curl -sS -o "$OUT/native-$e.txt" -w '%{http_code} %{size_download}' --max-time 30 "http://$NODE:6817/metrics/$e")
	echo "/metrics/$e: HTTP $code bytes, $(grep -c '^[a-z]' "$OUT/native-$e.txt") samples; $(grep -m3 '^[a-z]' "$OUT/native-$e.txt" | paste -sd'|' -)"
done >"$OUT/native-probe.txt"
cat "$OUT/native-probe.txt"

# native: two Prometheus servers, each scraping the five paths.
for p in 1 2; do
	install -d -m 0755 "/var/tmp/prom$p"
	chown prometheus "/var/tmp/prom$p"
	{
		printf 'global:\n  scrape_interval: %ss\n  scrape_timeout: 10s\nscrape_configs:\n' "$INTERVAL"
		for e in $NATIVE_PATHS; do
			printf '  - job_name: native-%s\n    metrics_path: /metrics/%s\n    static_configs:\n      - targets: [%s:6817]\n' "$e" "$e" "$NODE"
		done
	} >"/etc/vmtest-prom$p.yml"
	systemd-run --unit="vmtest-prom$p" -p User=prometheus /usr/bin/prometheus --config.file="/etc/vmtest-prom$p.yml" \
		--storage.tsdb.path="/var/tmp/prom$p" --web.listen-address="127.0.0.1:$((9090 + p))" >/dev/null || die "prometheus $p"
	need 60 "prometheus $p" curl -fsS -o /dev/null "http://127.0.0.1:$((9090 + p))/-/ready"
done
phase native
# Per server: scrapes in the window (up samples) and the successful ones.
NATIVE=""
for p in 1 2; do
	q() { curl -fsS "http://127.0.0.1:$((9090 + p))/api/v1/query" --data-urlencode "query=$1" | jq -r '.data.result[0].value[1] // "none"'; }
	NATIVE+=" prometheus $p: $(q "sum(count_over_time(up[${WINDOW}s]))") scrapes, $(q "sum(sum_over_time(up[${WINDOW}s]))") up;"
done
systemctl stop vmtest-prom1 vmtest-prom2

# rpcs FILE SECTION: "name count total_time_us" for each indented line of
# the section whose (unindented) heading contains SECTION: sdiag's and
# sacctmgr show stats' "by user" and "...
# by message type".
rpcs() {
	awk -v sec="$2" '
		/^[^ \t]/ { on = index($0, sec) > 0; next }
		on && /count:/ {
			n = $1; c = $0; sub(/.*count:/, "", c); sub(/ .*/, "", c)
			t = $0; sub(/.*total_time:/, "", t); sub(/ .*/, "", t)
			print n, c, t
		}' "$1"
}
# The jobs are done with: cancelled now, the VM powers off sooner.
QUEUE=$(squeue -h -o %T | sort | uniq -c | paste -sd' ' -)
scancel -u alice
# All phases' rows as "phase kind name count time_us" for the summary:
# slurmctld's (sdiag) and slurmdbd's (sacctmgr show stats, dbd*).
for ph in idle jobscope native; do
	rpcs "$OUT/sdiag-$ph.txt" "by user" | sed "s/^/$ph user /"
	rpcs "$OUT/sdiag-$ph.txt" "by message type" | sed "s/^/$ph type /"
	rpcs "$OUT/dbd-$ph.txt" "by user" | sed "s/^/$ph dbduser /"
	rpcs "$OUT/dbd-$ph.txt" "by message type" | sed "s/^/$ph dbdtype /"
done >"$OUT/rpcs.txt"
{
	echo "VM $VM: Slurm $(slurmd -V | awk '{print $2}'), kernel $(uname -r), $(nproc) vCPUs (TCG); RPCs seen by slurmctld (sdiag) in each phase of $POLLS intervals of $INTERVAL s ($WINDOW s)"
	echo "queue during the phases: $QUEUE"
	echo "jobscope phase: $SCRAPERS scrapers, $SCRAPES scrapes of /metrics in all; commands jobscope ran in the phase (its own counter): $(join -a1 -a2 -e0 -o 0,1.2,2.2 <(sort "$OUT/jobscope-runs-before.txt") <(sort "$OUT/jobscope-runs-after.txt") | awk '{printf "%s%s=%d", s, $1, $3 - $2; s = " "}')"
	echo "native phase: 2 Prometheus x 5 paths every $INTERVAL s;$NATIVE"
	echo "native endpoint at the start of the native phase:"
	sed 's/^/  /' "$OUT/native-probe.txt"
	awk -v win="$WINDOW" -v cpu="$(for ph in idle jobscope native; do printf '%s:%s,' "$ph" "$(cat "$OUT/cpu-$ph.txt" | tr ' ' :)"; done)" '
		BEGIN {
			np = split("idle jobscope native", ph, " ")
			n = split(cpu, kv, ","); for (i = 1; i <= n; i++) { split(kv[i], f, ":"); ctl[f[1]] = f[2]; dbd[f[1]] = f[3] }
		}
		{ cnt[$1, $2, $3] = $4; tm[$1, $2, $3] = $5; seen[$2, $3] = 1; tot[$1, $2] += $4; ttot[$1, $2] += $5 }
		function row(kind, name,   i, s, d) {
			s = sprintf("  %-34s", name)
			for (i = 1; i <= np; i++) s = s sprintf(" %7d %9.1f", cnt[ph[i], kind, name], tm[ph[i], kind, name] / 1000)
			for (i = 2; i <= np; i++) { d = cnt[ph[i], kind, name] - cnt["idle", kind, name]; s = s sprintf(" %+8.1f", d * 60 / win) }
			print s
		}
		function section(kind, title,   k, parts) {
			printf "\n%s: count and total time (ms) per phase; per minute over idle\n", title
			printf "  %-34s %17s %17s %17s %8s %8s\n", "", "idle", "jobscope", "native", "jobscope", "native"
			# Sorted by name through sort(1): mawk has no asort.
			printf "" >"/tmp/rpc-names"; close("/tmp/rpc-names")
			for (k in seen) { split(k, parts, SUBSEP); if (parts[1] == kind) print parts[2] | "sort >/tmp/rpc-names" }
			close("sort >/tmp/rpc-names")
			while ((getline k <"/tmp/rpc-names") > 0) row(kind, k)
			close("/tmp/rpc-names")
			cnt["idle", kind, "TOTAL"] = tot["idle", kind]; tm["idle", kind, "TOTAL"] = ttot["idle", kind]
			cnt["jobscope", kind, "TOTAL"] = tot["jobscope", kind]; tm["jobscope", kind, "TOTAL"] = ttot["jobscope", kind]
			cnt["native", kind, "TOTAL"] = tot["native", kind]; tm["native", kind, "TOTAL"] = ttot["native", kind]
			row(kind, "TOTAL")
		}
		END {
			section("user", "slurmctld RPCs by user")
			section("type", "slurmctld RPCs by message type")
			section("dbduser", "slurmdbd RPCs by user")
			section("dbdtype", "slurmdbd RPCs by message type")
			printf "\nCPU time (s) over the window:     %8s %8s %8s\n", "idle", "jobscope", "native"
			printf "  slurmctld.service                %8.2f %8.2f %8.2f\n", ctl["idle"] / 1e6, ctl["jobscope"] / 1e6, ctl["native"] / 1e6
			printf "  slurmdbd.service                 %8.2f %8.2f %8.2f\n", dbd["idle"] / 1e6, dbd["jobscope"] / 1e6, dbd["native"] / 1e6
		}' "$OUT/rpcs.txt"
} >"$OUT/table.txt"
cat "$OUT/table.txt"
cp /var/log/slurm/slurmctld.log "$OUT/" 2>/dev/null
exit 0
