# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# The report service (jobscope report-service) against the real Slurm and
# munged of test/e2e/run.sh (sourced by it; munge_setup and munge_e2e run
# after report_e2e: carol exists, alice's and bob's jobs still run). The
# users' report.yml names only the service: no Prometheus settings. Checks
# the access rules (owner, coordinator, another user, a job that claims
# another user in its environment) and the credentials munged must refuse.

PORT_RSVC=19836
RSVC_URL=http://127.0.0.1:$PORT_RSVC

# rsvc_as USER ARGS...: jobscope report as USER with the client file.
rsvc_as() { runuser -u "$1" -- "$WORK/bin/jobscope" report --config="$WORK/etc/report-client.yml" --color=never "${@:2}"; }

# rsvc_cred [MUNGE-ARGS...] PATHQUERY: a credential bound to GET PATHQUERY,
# made as the service's client makes it (internal/mungeauth.Payload).
rsvc_cred() {
	local pq=${*: -1} nonce
	nonce=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
	printf 'jobscope-report-v1\nGET\n%s\n%s\n%s\n' "$pq" "$nonce" "$(date +%s)" | munge "${@:1:$#-1}" --input=/dev/stdin
}

# rsvc_alice_cred [MUNGE-ARGS...] PATHQUERY: the same, made by alice.
rsvc_alice_cred() { runuser -u alice -- bash -c "$(declare -f rsvc_cred); rsvc_cred \"\$@\"" _ "$@"; }

# rsvc_status CRED PATHQUERY: the HTTP status the service answers.
rsvc_status() { curl -s -o /dev/null -w '%{http_code}' --max-time 20 -H "Authorization: MUNGE $1" "$RSVC_URL$2"; }

# rsvc_count DECISION REASON: the service's decision counter.
rsvc_count() {
	curl -fsS --max-time 5 "$RSVC_URL/metrics" |
		awk -v k="jobscope_report_service_requests_total{decision=\"$1\",reason=\"$2\"}" '$1 == k { print $2 }'
}

munge_setup() {
	cat >"$WORK/etc/report-service.yml" <<EOF
listen: "127.0.0.1:$PORT_RSVC"
report:
  prometheus:
    url: http://127.0.0.1:$PORT_PROM
    timeout: 15s
  lookback: 1d
  thresholds:
    min_elapsed: 10s
proxy:
  header: X-Remote-User
  trusted: ["127.0.0.2/32"]
cache_ttl: 5s
EOF
	printf 'service: %s\n' "$RSVC_URL" >"$WORK/etc/report-client.yml"
	chmod 0644 "$WORK/etc/report-client.yml"
	sacctmgr -i add coordinator account=physics names=carol >/dev/null || die "carol as coordinator of physics"
	setsid "$BIN" report-service --config="$WORK/etc/report-service.yml" >"$WORK/log/report-service.log" 2>&1 </dev/null &
	echo $! >"$WORK/run/report-service.pid"
	need 15 "report service" curl -fsS --max-time 2 -o /dev/null "$RSVC_URL/metrics"
	# A second munged with another key: what it makes is wrong-keyed here.
	install -d -m 0711 "$WORK/munge2"
	head -c 1024 /dev/urandom >"$WORK/munge2/key"
	chmod 0600 "$WORK/munge2/key"
	/usr/sbin/munged --force --socket="$WORK/munge2/sock" --key-file="$WORK/munge2/key" \
		--pid-file="$WORK/run/munged2.pid" --log-file="$WORK/log/munged2.log" --seed-file="$WORK/munge2/seed" ||
		die "second munged"
}

munge_e2e() {
	log "report service"
	local out err code pq c jf
	out=$(rsvc_as alice "$J_BURN" 2>&1)
	check_eq "service: alice's job, no Prometheus settings (exit)" 0 "$?"
	check_ge "service: alice's report shows her job" 1 "$(grep -c "$J_BURN" <<<"$out")"
	err=$(rsvc_as alice "$J_HOLD" 2>&1 >/dev/null)
	code=$?
	check_eq "service: bob's job for alice: exit" 1 "$code"
	check_eq "service: bob's job for alice: one line, why" "1/1" \
		"$(wc -l <<<"$err")/$(grep -c "job $J_HOLD: Slurm accounting lists no job of that id that alice may read" <<<"$err")"
	err=$(rsvc_as alice --user=bob --since=1h 2>&1 >/dev/null)
	code=$?
	check_eq "service: --user bob for alice: exit, one line" "1/1" "$code/$(wc -l <<<"$err")"
	rsvc_as carol "$J_BURN" >/dev/null 2>&1
	check_eq "service: carol (coordinator of physics) reads alice's physics job" 0 "$?"
	check_eq "service: carol refused bob's chemistry job" 1 \
		"$(rsvc_as carol "$J_HOLD" 2>&1 >/dev/null | grep -c 'no job of that id that')"

	# A job of alice that claims bob in its environment: Slurm says alice.
	jf=$(runuser -u alice -- env SLURM_CONF="$SLURM_CONF" SLURM_JOB_USER=bob USER=bob LOGNAME=bob \
		sbatch --parsable --export=ALL -A physics -p debug -t 2 --chdir="$WORK/jobs" -o /dev/null -J bob \
		"$WORK/jobs/sleep.sh" | cut -d';' -f1)
	if [[ $jf =~ ^[0-9]+$ ]]; then
		wait_for 20 "sacct knows job $jf" sh -c "sacct -n -X -j $jf -o User | grep -q alice"
		check_eq "service: job claiming bob in its environment: bob refused" 1 \
			"$(rsvc_as bob "$jf" 2>&1 >/dev/null | grep -c 'no job of that id that')"
		check_eq "service: ... alice, its owner, not refused" 0 \
			"$(rsvc_as alice "$jf" 2>&1 >/dev/null | grep -c 'no job of that id that')"
		scancel "$jf" 2>/dev/null
	else
		row "service: job claiming bob in its environment" "a job id" "$jf" FAIL
	fi

	pq="/v1/job/$J_BURN?format=text"
	c=$(rsvc_alice_cred "$pq")
	check_eq "service: a good credential of alice" 200 "$(rsvc_status "$c" "$pq")"
	check_eq "service: the same credential again (replayed)" 401 "$(rsvc_status "$c" "$pq")"
	c=$(rsvc_alice_cred -t 1 "$pq")
	sleep 2
	check_eq "service: an expired credential" 401 "$(rsvc_status "$c" "$pq")"
	c=$(rsvc_cred --socket="$WORK/munge2/sock" "$pq")
	check_eq "service: a credential of another key" 401 "$(rsvc_status "$c" "$pq")"
	check_eq "service: counted replayed/expired/invalid" "1/1/1" \
		"$(rsvc_count refused replayed)/$(rsvc_count refused expired)/$(rsvc_count refused invalid)"
	c=$(rsvc_alice_cred "$pq")
	local ch=A
	[ "${c:20:1}" = A ] && ch=B
	check_eq "service: a forged credential (one byte changed)" 401 "$(rsvc_status "${c:0:20}$ch${c:21}" "$pq")"
	check_eq "service: a credential for another request" 401 "$(rsvc_status "$c" "/v1/job/$J_HOLD?format=text")"
	check_eq "service: the user header from a host that is not the proxy" 403 \
		"$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 -H 'X-Remote-User: bob' "$RSVC_URL/")"
	check_eq "service: a cause is logged once" 1 "$(grep -c 'reason=replayed' "$WORK/log/report-service.log")"
	kill_pidfile "$WORK/run/report-service.pid" 5
	kill_pidfile "$WORK/run/munged2.pid" 5
}
