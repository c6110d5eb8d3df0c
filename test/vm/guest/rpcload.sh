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
# Its short form (make site-e2e, in CI) asserts: test/site/guest/rpcbudget.sh, at
# the end of the site's ctl VM (make site-e2e), counts the controller
# unit's RPCs by sdiag over a few poll intervals against the documented
# per-run table (docs/controller.md).
#
# (RPC_POLLS=2 in the host's environment makes a short trial run; run.sh
# passes RPC_POLLS and RPC_INTERVAL into the guest.) Five phases of
# RPC_POLLS (10) intervals of RPC_INTERVAL (15) seconds each, on one cluster
# with a queue (running and pending jobs), sdiag --reset at the start of each
# and sdiag read at its end:
#   idle        nothing scrapes: what slurmd, slurmdbd, the jobs and this
#               script's own sdiag calls ask anyway (the baseline)
#   jobscope    the shipped controller unit, --slurm.poll-interval=RPC_INTERVAL,
#               default collectors, its /metrics scraped every RPC_INTERVAL
#               by two Prometheus servers (one scrape config each): scraped
#               as the native endpoint is, so the CPU comparison is this
#               phase against the next
#   restd       the controller unit again, its jobs and nodes from slurmrestd
#               (--slurm.source=slurmrestd): slurmrestd on a unix socket
#               with rest_auth/local, run as the unit's user (jobscope), so
#               slurmctld counts its RPCs under that user too; scraped as
#               the jobscope phase is. slurmrestd's own CPU is its unit's
#   native      slurmctld's MetricsType=metrics/openmetrics endpoint, its five
#               paths scraped every RPC_INTERVAL by two Prometheus servers
#               started the same way
#   jobscope-20 the controller unit again, 20 concurrent scrapers each
#               scraping /metrics once a second: scrapers add no RPCs (its
#               RPCs by user jobscope against the jobscope phase's), but its
#               CPU figures carry the scrapers' own load, which a busy TCG
#               guest charges to every process, slurmctld included
#   idle-end    nothing scrapes, again
# (Phases run in this order: idle jobscope restd native jobscope-20
# idle-end.) Above idle is against the two idle phases interpolated to each phase's
# middle: slurmctld's own activity drifts (jobs running longer, its
# periodic work), and a straight line through both ends takes that out of
# every phase alike. jobscope and native run back to back, next to each
# other, so what drift remains is small between the two being compared.
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
# slurmdbd's own RPC statistics into out/dbd-NAME.txt; into out/cpu-NAME.txt
# slurmctld's and slurmdbd's CPU time (us) over the window, when it began
# (ms since the epoch) and how long it lasted (ms: the sdiag and sacctmgr
# calls at its ends make it a little longer than WINDOW under TCG).
phase() {
	local c0 d0 c1 d1 t0 t1
	sacctmgr -i clear stats >/dev/null || log "sacctmgr clear stats failed"
	sdiag --reset >/dev/null || die "sdiag --reset"
	t0=$(date +%s%3N) c0=$(cpu_us slurmctld.service) d0=$(cpu_us slurmdbd.service)
	log "phase $1: $WINDOW s"
	sleep "$WINDOW"
	sdiag >"$OUT/sdiag-$1.txt" || die "sdiag"
	sacctmgr show stats >"$OUT/dbd-$1.txt" 2>&1
	c1=$(cpu_us slurmctld.service) d1=$(cpu_us slurmdbd.service) t1=$(date +%s%3N)
	echo "$((c1 - c0)) $((d1 - d0)) $t0 $((t1 - t0))" >"$OUT/cpu-$1.txt"
}

# start_ctl: the shipped controller unit, poll interval set to the
# window's, serving and past its first poll (which also runs the slow
# sources, sshare and scontrol show reservation and licenses, and sacct's
# first, widest query) before any phase starts.
start_ctl() {
	systemctl start jobscope-controller || die "jobscope-controller did not start"
	need 60 "controller unit serves" curl -fsS -o /dev/null "http://127.0.0.1:$CTL_PORT/metrics"
	need 60 "controller's first poll" sh -c "curl -fsS --max-time 30 http://127.0.0.1:$CTL_PORT/metrics | grep -q '^jobscope_slurm_command_runs_total{command=\"sshare\"} [1-9]'"
}

# prom_start PHASE TARGET: two Prometheus servers (ports 9091, 9092), each
# with a fresh TSDB and the same global settings whatever they scrape:
# every INTERVAL, 10 s timeout. TARGET native: the endpoint's five paths,
# one scrape config each; ctl: jobscope's /metrics, one scrape config.
prom_start() {
	local p e
	for p in 1 2; do
		rm -rf "/var/tmp/prom-$1-$p"
		install -d -m 0755 -o prometheus "/var/tmp/prom-$1-$p"
		{
			printf 'global:\n  scrape_interval: %ss\n  scrape_timeout: 10s\nscrape_configs:\n' "$INTERVAL"
			if [ "$2" = native ]; then
				for e in $NATIVE_PATHS; do
					printf '  - job_name: native-%s\n    metrics_path: /metrics/%s\n    static_configs:\n      - targets: [%s:6817]\n' "$e" "$e" "$NODE"
				done
			else
				printf '  - job_name: jobscope-controller\n    metrics_path: /metrics\n    static_configs:\n      - targets: [127.0.0.1:%s]\n' "$CTL_PORT"
			fi
		} >"/etc/vmtest-prom-$1-$p.yml"
		systemd-run --unit="vmtest-prom-$1-$p" -p User=prometheus /usr/bin/prometheus --config.file="/etc/vmtest-prom-$1-$p.yml" \
			--storage.tsdb.path="/var/tmp/prom-$1-$p" --web.listen-address="127.0.0.1:$((9090 + p))" >/dev/null || die "prometheus $1 $p"
		need 60 "prometheus $1 $p" curl -fsS -o /dev/null "http://127.0.0.1:$((9090 + p))/-/ready"
	done
}

# prom_stop PHASE: the scrapes each server made in the window (up samples)
# and the successful ones, into out/prom-PHASE.txt; then both stop.
prom_stop() {
	local p
	for p in 1 2; do
		q() { curl -fsS "http://127.0.0.1:$((9090 + p))/api/v1/query" --data-urlencode "query=$1" | jq -r '.data.result[0].value[1] // "none"'; }
		printf ' prometheus %s: %s scrapes, %s up;' "$p" "$(q "sum(count_over_time(up[${WINDOW}s]))")" "$(q "sum(sum_over_time(up[${WINDOW}s]))")"
	done >"$OUT/prom-$1.txt"
	systemctl stop "vmtest-prom-$1-1" "vmtest-prom-$1-2"
}

# ctl_phase NAME: a phase with the controller unit running, its own
# command counters read before and after (each read is a scrape: the one
# after may start one more poll, after the window), its metrics kept.
ctl_phase() {
	ctl_runs >"$OUT/runs-$1-before.txt"
	phase "$1"
	ctl_runs >"$OUT/runs-$1-after.txt"
	curl -fsS --max-time 60 "http://127.0.0.1:$CTL_PORT/metrics" >"$OUT/metrics-$1.txt"
}

phase idle

id jobscope >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin jobscope
install -m 0755 "$SRC/bin/jobscope" /usr/bin/jobscope
install -m 0644 "$SRC/contrib/systemd/jobscope-controller.service" "$UNIT_DIR/"
mkdir -p "$UNIT_DIR/jobscope-controller.service.d"
printf '[Service]\nExecStart=\nExecStart=%s --slurm.poll-interval=%ss\n' \
	"$(unit_execstart "$SRC/contrib/systemd/jobscope-controller.service")" "$INTERVAL" \
	>"$UNIT_DIR/jobscope-controller.service.d/vmtest.conf"
systemctl daemon-reload

# jobscope: scraped as the native endpoint is, by two Prometheus servers.
start_ctl
prom_start jobscope ctl
ctl_phase jobscope
prom_stop jobscope
systemctl stop jobscope-controller

# restd: the same unit reading jobs and nodes from slurmrestd, which runs
# as the unit's user (it refuses root and SlurmUser; rest_auth/local lets
# in its own uid and root).
RESTD_SOCK=/run/jobscope-restd/slurmrestd.sock
install -d -m 0750 -o jobscope -g "$(id -gn jobscope)" "$(dirname "$RESTD_SOCK")"
systemd-run --unit=vmtest-slurmrestd -p User=jobscope -p Group="$(id -gn jobscope)" \
	"$(command -v slurmrestd)" -a rest_auth/local "unix:$RESTD_SOCK" >/dev/null || die "slurmrestd did not start"
need 60 "slurmrestd answers" curl -fsS -o /dev/null --unix-socket "$RESTD_SOCK" http://slurmrestd/slurm/v0.0.44/ping
printf '[Service]\nExecStart=\nExecStart=%s --slurm.poll-interval=%ss --slurm.source=slurmrestd --slurm.restd.url=unix://%s\n' \
	"$(unit_execstart "$SRC/contrib/systemd/jobscope-controller.service")" "$INTERVAL" "$RESTD_SOCK" \
	>"$UNIT_DIR/jobscope-controller.service.d/vmtest.conf"
systemctl daemon-reload
start_ctl
prom_start restd ctl
r0=$(cpu_us vmtest-slurmrestd.service)
ctl_phase restd
echo "$(($(cpu_us vmtest-slurmrestd.service) - r0))" >"$OUT/cpu-slurmrestd.txt"
prom_stop restd
journalctl -b --no-pager -o short-monotonic -u jobscope-controller >"$OUT/jobscope-controller-restd.log" 2>&1
systemctl stop jobscope-controller vmtest-slurmrestd
printf '[Service]\nExecStart=\nExecStart=%s --slurm.poll-interval=%ss\n' \
	"$(unit_execstart "$SRC/contrib/systemd/jobscope-controller.service")" "$INTERVAL" \
	>"$UNIT_DIR/jobscope-controller.service.d/vmtest.conf"
systemctl daemon-reload

# The native endpoint as a scraper sees it: status, size, first lines.
for e in $NATIVE_PATHS; do
	code=$(curl -sS -o "$OUT/native-$e.txt" -w '%{http_code} %{size_download}' --max-time 30 "http://$NODE:6817/metrics/$e")
	echo "/metrics/$e: HTTP $code bytes, $(grep -c '^[a-z]' "$OUT/native-$e.txt") samples; $(grep -m3 '^[a-z]' "$OUT/native-$e.txt" | paste -sd'|' -)"
done >"$OUT/native-probe.txt"
cat "$OUT/native-probe.txt"

# native: two Prometheus servers, each scraping the five paths.
prom_start native native
phase native
prom_stop native

# jobscope-20: the controller again, restarted as before, and 20 scrapers.
start_ctl
pids=()
rm -rf /var/tmp/scrapes
mkdir -p /var/tmp/scrapes
for i in $(seq "$SCRAPERS"); do
	(while :; do curl -fsS -o /dev/null --max-time 30 "http://127.0.0.1:$CTL_PORT/metrics" && echo >>"/var/tmp/scrapes/$i"; sleep 1; done) &
	pids+=($!)
done
sleep 2
ctl_phase jobscope-20
kill "${pids[@]}" 2>/dev/null
wait "${pids[@]}" 2>/dev/null
SCRAPES=$(cat /var/tmp/scrapes/* | wc -l)
journalctl -b --no-pager -o short-monotonic -u jobscope-controller >"$OUT/jobscope-controller.log" 2>&1
systemctl stop jobscope-controller

phase idle-end

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
# runs PHASE: the commands jobscope ran in the phase, by its own counter.
runs() {
	join -a1 -a2 -e0 -o 0,1.2,2.2 <(sort "$OUT/runs-$1-before.txt") <(sort "$OUT/runs-$1-after.txt") |
		awk '{printf "%s%s=%d", s, $1, $3 - $2; s = " "}'
}
# The jobs are done with: cancelled now, the VM powers off sooner.
QUEUE=$(squeue -h -o %T | sort | uniq -c | paste -sd' ' -)
scancel -u alice
PHASES="idle jobscope restd native jobscope-20 idle-end"
# All phases' rows as "phase kind name count time_us" for the summary:
# slurmctld's (sdiag) and slurmdbd's (sacctmgr show stats, dbd*).
for ph in $PHASES; do
	rpcs "$OUT/sdiag-$ph.txt" "by user" | sed "s/^/$ph user /"
	rpcs "$OUT/sdiag-$ph.txt" "by message type" | sed "s/^/$ph type /"
	rpcs "$OUT/dbd-$ph.txt" "by user" | sed "s/^/$ph dbduser /"
	rpcs "$OUT/dbd-$ph.txt" "by message type" | sed "s/^/$ph dbdtype /"
done >"$OUT/rpcs.txt"
{
	echo "VM $VM: Slurm $(slurmd -V | awk '{print $2}'), kernel $(uname -r), $(nproc) vCPUs (TCG); RPCs seen by slurmctld (sdiag) in each phase of $POLLS intervals of $INTERVAL s ($WINDOW s), in this order: $PHASES"
	echo "queue during the phases: $QUEUE"
	echo "jobscope phase: 2 Prometheus x /metrics every $INTERVAL s;$(cat "$OUT/prom-jobscope.txt") commands jobscope ran (its own counter): $(runs jobscope)"
	echo "restd phase: 2 Prometheus x /metrics every $INTERVAL s;$(cat "$OUT/prom-restd.txt") commands and requests jobscope ran (its own counter): $(runs restd); slurmrestd's own CPU: $(awk '{printf "%.2f s", $1 / 1e6}' "$OUT/cpu-slurmrestd.txt")"
	echo "native phase: 2 Prometheus x 5 paths every $INTERVAL s;$(cat "$OUT/prom-native.txt")"
	echo "jobscope-20 phase: $SCRAPERS scrapers, $SCRAPES scrapes of /metrics in all; commands jobscope ran (its own counter): $(runs jobscope-20)"
	echo "native endpoint at the start of the native phase:"
	sed 's/^/  /' "$OUT/native-probe.txt"
	awk -v phases="$PHASES" -v polls="$POLLS" -v p1="$(runs jobscope | grep -o 'squeue=[0-9]*' | cut -d= -f2)" \
		-v p2="$(runs jobscope-20 | grep -o 'squeue=[0-9]*' | cut -d= -f2)" -v cpu="$(for ph in $PHASES; do printf '%s:%s,' "$ph" "$(tr ' ' : <"$OUT/cpu-$ph.txt")"; done)" '
		BEGIN {
			np = split(phases, ph, " ")
			n = split(cpu, kv, ",")
			for (i = 1; i <= n; i++) { split(kv[i], f, ":"); ctl[f[1]] = f[2]; dbd[f[1]] = f[3]; t0[f[1]] = f[4]; el[f[1]] = f[5] / 1000 }
			# Where each phase sits between the two idle phases (0 to 1),
			# by its middle: the idle rates are interpolated to it.
			a = t0["idle"] + el["idle"] * 500; b = t0["idle-end"] + el["idle-end"] * 500
			for (i = 1; i <= np; i++) at[ph[i]] = b > a ? (t0[ph[i]] + el[ph[i]] * 500 - a) / (b - a) : 0
			# Measured phases: the per-minute columns.
			nm = split("jobscope restd native jobscope-20", mp, " ")
		}
		{ cnt[$1, $2, $3] = $4; tm[$1, $2, $3] = $5; seen[$2, $3] = 1; cnt[$1, $2, "TOTAL"] += $4; tm[$1, $2, "TOTAL"] += $5 }
		# above(v, p): v[p] a minute, less the idle phases interpolated to p.
		function perm(x, p) { return el[p] > 0 ? x * 60 / el[p] : 0 }
		function above(x, p, xi, xe,   i0, i1) {
			i0 = perm(xi, "idle"); i1 = perm(xe, "idle-end")
			return perm(x, p) - (i0 + (i1 - i0) * at[p])
		}
		function row(kind, name, time, scale, fmt,   i, s, p, v) {
			s = sprintf("  %-32s", name)
			for (i = 1; i <= np; i++) {
				v = time ? tm[ph[i], kind, name] : cnt[ph[i], kind, name]
				s = s sprintf(" %11" fmt, v / scale)
			}
			s = s " |"
			for (i = 1; i <= nm; i++) {
				p = mp[i]
				if (time) v = above(tm[p, kind, name], p, tm["idle", kind, name], tm["idle-end", kind, name])
				else v = above(cnt[p, kind, name], p, cnt["idle", kind, name], cnt["idle-end", kind, name])
				s = s sprintf(" %+11.1f", v / scale)
			}
			print s
		}
		function header(title,   i, s) {
			printf "\n%s\n", title
			s = sprintf("  %-32s", "")
			for (i = 1; i <= np; i++) s = s sprintf(" %11s", ph[i])
			s = s " |"
			for (i = 1; i <= nm; i++) s = s sprintf(" %11s", mp[i])
			print s
		}
		function section(kind, title,   k, parts, names, n, i) {
			# Sorted by name through sort(1): mawk has no asort.
			printf "" >"/tmp/rpc-names"; close("/tmp/rpc-names")
			for (k in seen) { split(k, parts, SUBSEP); if (parts[1] == kind) print parts[2] | "sort >/tmp/rpc-names" }
			close("sort >/tmp/rpc-names")
			n = 0
			while ((getline k <"/tmp/rpc-names") > 0) names[++n] = k
			close("/tmp/rpc-names")
			header(title ": count in each phase | a minute above idle")
			for (i = 1; i <= n; i++) row(kind, names[i], 0, 1, "d")
			row(kind, "TOTAL", 0, 1, "d")
			header(title ": total time (ms) in each phase | ms a minute above idle")
			for (i = 1; i <= n; i++) row(kind, names[i], 1, 1000, ".1f")
			row(kind, "TOTAL", 1, 1000, ".1f")
		}
		function cpurow(name, v,   i, s, p) {
			s = sprintf("  %-32s", name)
			for (i = 1; i <= np; i++) s = s sprintf(" %11.2f", v[ph[i]] / 1e6)
			s = s " |"
			for (i = 1; i <= nm; i++) { p = mp[i]; s = s sprintf(" %+11.2f", above(v[p], p, v["idle"], v["idle-end"]) / 1e6) }
			print s
		}
		END {
			section("user", "slurmctld RPCs by user")
			section("type", "slurmctld RPCs by message type")
			section("dbduser", "slurmdbd RPCs by user")
			section("dbdtype", "slurmdbd RPCs by message type")
			header("CPU time (s) in each phase (its cgroup) | s a minute above idle")
			s = sprintf("  %-32s", "window (s)")
			for (i = 1; i <= np; i++) s = s sprintf(" %11.1f", el[ph[i]])
			print s
			cpurow("slurmctld.service", ctl)
			cpurow("slurmdbd.service", dbd)
			c1 = above(ctl["jobscope"], "jobscope", ctl["idle"], ctl["idle-end"]) / 1e6
			c2 = above(ctl["native"], "native", ctl["idle"], ctl["idle-end"]) / 1e6
			printf "\nslurmctld CPU a minute above idle, jobscope (2 Prometheus) against native: %.2f s against %.2f s: %s\n", c1, c2,
				c1 <= c2 ? "jobscope at or below native" : sprintf("jobscope ABOVE native by %.2f s", c1 - c2)
			c3 = above(ctl["restd"], "restd", ctl["idle"], ctl["idle-end"]) / 1e6
			printf "slurmctld CPU a minute above idle, jobscope with slurmrestd (2 Prometheus) against native: %.2f s against %.2f s: %s\n", c3, c2,
				c3 <= c2 ? "restd at or below native" : sprintf("restd ABOVE native by %.2f s", c3 - c2)
			# jobscope polls when a scrape finds the last poll an interval
			# old or more: 20 scrapers a second poll every interval, two
			# Prometheus servers scraping every interval poll every one to
			# two intervals (a scrape a little early waits for the next).
			# Scrapers never add polls: each phase stays within the
			# intervals of the window, at the same RPCs a poll.
			r1 = cnt["jobscope", "user", "jobscope"] + 0; r2 = cnt["jobscope-20", "user", "jobscope"] + 0
			printf "slurmctld RPCs by user jobscope in the window: jobscope (2 Prometheus) %d in %d polls, jobscope-20 %d in %d polls (its squeue runs); at most %d polls fit the window: %s\n",
				r1, p1, r2, p2, polls, p1 <= polls && p2 <= polls ? "both within" : "ABOVE: scrapers added polls"
			if (p1 > 0 && p2 > 0)
				printf "  a poll: %.1f and %.1f RPCs, %.3f and %.3f s of slurmctld CPU above idle\n", r1 / p1, r2 / p2,
					above(ctl["jobscope"], "jobscope", ctl["idle"], ctl["idle-end"]) / 1e6 * el["jobscope"] / 60 / p1,
					above(ctl["jobscope-20"], "jobscope-20", ctl["idle"], ctl["idle-end"]) / 1e6 * el["jobscope-20"] / 60 / p2
		}' "$OUT/rpcs.txt"
} >"$OUT/table.txt"
cat "$OUT/table.txt"
cp /var/log/slurm/slurmctld.log "$OUT/" 2>/dev/null
exit 0
