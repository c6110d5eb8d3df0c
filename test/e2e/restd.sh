# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# The slurmrestd source against a real slurmrestd, for test/e2e/run.sh
# (sourced; uses its helpers and variables): Debian's slurmrestd on a unix
# socket with rest_auth/local, a third controller instance reading jobs and
# nodes from it (--slurm.source=slurmrestd), and its cluster families
# compared with the command instance's at one moment.
#
# Who runs what: 22.05's slurmrestd refuses to start as root or SlurmUser
# (or with their groups) unless SLURMRESTD_SECURITY=disable_user_check, so
# it runs as a user of its own, RESTD_USER; rest_auth/local then accepts
# that uid (and root) on its socket, and slurmctld sees RESTD_USER as the
# caller. The restd instance of jobscope runs as that user too, as a site
# would run it.
#
# The answers slurmrestd gives at that moment are saved beside squeue
# --json and sinfo --json of the same moment (restd_capture), into
# $WORK/restd-capture and, with JOBSCOPE_E2E_CAPTURE=DIR, into DIR: the
# restd-*-e2e.json captures of testdata/slurm/22.05 were made so.

PORT_RESTD=19823 # 19822 is levels.sh's PORT_FULL
RESTD_USER=jsrestd
RESTD_SOCK=$WORK/run/restd/slurmrestd.sock
# The families a source of jobs and nodes decides (not the load and free
# memory slurmd's pings move between two polls, nor the waits each
# instance observes from its own start).
RESTD_QUEUE='slurm_queue_(jobs|user_jobs|account_jobs)(_cpus|_memory_bytes|_gpus)?|slurm_queue_jobs_pending|slurm_queue_pending_reasons'
RESTD_NODES='slurm_cluster_(nodes|cpus|cpus_configured|node_state_cpus|memory_real_bytes|memory_allocated_bytes|gpus_configured|gpus_allocated)|slurm_cluster_node_(info|cpus_configured|cpus_allocated|memory_real_bytes|memory_allocated_bytes|gpus_configured|gpus_allocated)|slurm_cluster_partition_(nodes|cpus|cpus_configured|memory_real_bytes|memory_allocated_bytes|gpus_configured|gpus_allocated|weight)'

# as_restd CMD...: CMD as RESTD_USER (setpriv execs it: the pid is CMD's).
as_restd() { setpriv --reuid="$RESTD_USER" --regid="$RESTD_USER" --init-groups "$@"; }

# restd_get PATH [CURL-OPTION...]: slurmrestd's answer to GET PATH, asked
# as RESTD_USER.
restd_get() { as_restd curl -sS --max-time 20 --unix-socket "$RESTD_SOCK" "${@:2}" "http://slurmrestd$1"; }

# restd_up: slurmrestd answers 22.05's ping (HTTP 200).
restd_up() { restd_get /slurm/v0.0.38/ping -f -o /dev/null; }

has_restd() { has_flag slurm.source && command -v slurmrestd >/dev/null; }

# restd_start: slurmrestd and the controller instance that reads it.
restd_start() {
	has_restd || return 0
	has_collector slurm_node || return 0
	# sacct stays off here: the slurmdbd check of controller.sh counts the
	# other two instances' queries, and sacct is no part of this source.
	curl -s -o /dev/null --max-time 2 "http://127.0.0.1:$PORT_RESTD/" && die "port $PORT_RESTD on 127.0.0.1 is taken by another program"
	id "$RESTD_USER" >/dev/null 2>&1 ||
		useradd --system --user-group --no-create-home --shell /usr/sbin/nologin "$RESTD_USER" || die "useradd $RESTD_USER failed"
	install -d -m 0750 -o "$RESTD_USER" -g "$RESTD_USER" "$(dirname "$RESTD_SOCK")"
	rm -f "$RESTD_SOCK"
	setsid setpriv --reuid="$RESTD_USER" --regid="$RESTD_USER" --init-groups \
		slurmrestd -a rest_auth/local "unix:$RESTD_SOCK" >"$WORK/log/slurmrestd.log" 2>&1 </dev/null &
	echo $! >"$WORK/run/slurmrestd.pid"
	need 30 "slurmrestd answers on $RESTD_SOCK" restd_up
	local slow=()
	has_flag slurm.slow-poll-interval && slow=(--slurm.slow-poll-interval=1s)
	setsid setpriv --reuid="$RESTD_USER" --regid="$RESTD_USER" --init-groups \
		"$BIN" --mode=controller --slurm.source=slurmrestd --slurm.restd.url="unix://$RESTD_SOCK" \
		--slurm.poll-interval=1s "${slow[@]}" --collector.slurm_sacct=false \
		--web.listen-address=127.0.0.1:$PORT_RESTD >"$WORK/log/jobscope-restd.log" 2>&1 </dev/null &
	echo $! >"$WORK/run/jobscope-restd.pid"
	need 30 "jobscope controller (slurmrestd) /metrics" curl -fsS -o /dev/null "http://127.0.0.1:$PORT_RESTD/metrics"
}

# restd_families FILE REGEX: the series of the families, sorted.
restd_families() { grep -E "^($2)(\{| )" "$1" | sort; }

# restd_compare CMDFILE: the restd instance's jobs and nodes families equal
# the command instance's, both scraped at one moment after a fresh poll
# each (1 s poll: past a second, a scrape polls). A job may change state
# between the two polls: up to 5 tries; the diff is the row when none agrees.
restd_compare() {
	if ! has_restd; then
		skip "slurmrestd source" "no --slurm.source in this build, or no slurmrestd"
		return 0
	fi
	local C=$1 R=$WORK/metrics/ctl-restd.txt i p q n dq dn
	for i in 1 2 3 4 5; do
		sleep 1.2
		# Wait for these two scrapes only: a bare wait would wait for
		# every daemon this shell started too.
		scrape "$PORT_CTL" "$C" &
		p=$!
		scrape "$PORT_RESTD" "$R" &
		wait "$p" $!
		dq=$(diff <(restd_families "$C" "$RESTD_QUEUE") <(restd_families "$R" "$RESTD_QUEUE") | grep '^[<>]')
		dn=$(diff <(restd_families "$C" "$RESTD_NODES") <(restd_families "$R" "$RESTD_NODES") | grep '^[<>]')
		[ -z "$dq$dn" ] && break
		log "slurmrestd vs commands, try $i: $(printf '%s\n' "$dq" "$dn" | head -4 | tr '\n' ' ')"
	done
	q=$(restd_families "$R" "$RESTD_QUEUE" | wc -l)
	n=$(restd_families "$R" "$RESTD_NODES" | wc -l)
	if [ -z "$dq" ] && [ "$q" -gt 0 ]; then
		row "slurmrestd vs commands: queue by partition/user/account/reason" "same series and values" "$q series (try $i)" PASS
	else
		row "slurmrestd vs commands: queue by partition/user/account/reason" "same series and values" "$q series; $(printf '%s\n' "$dq" | head -3 | tr '\n' ' ')" FAIL
	fi
	if [ -z "$dn" ] && [ "$n" -gt 0 ]; then
		row "slurmrestd vs commands: nodes, CPUs, memory (cluster, node, partition)" "same series and values" "$n series (try $i)" PASS
	else
		row "slurmrestd vs commands: nodes, CPUs, memory (cluster, node, partition)" "same series and values" "$n series; $(printf '%s\n' "$dn" | head -3 | tr '\n' ' ')" FAIL
	fi
	check_ge 'slurmrestd instance: runs{command="slurmrestd:jobs"}' 1 "$(mnum "$R" jobscope_slurm_command_runs_total 'command="slurmrestd:jobs"')"
	check_ge 'slurmrestd instance: runs{command="slurmrestd:nodes"}' 1 "$(mnum "$R" jobscope_slurm_command_runs_total 'command="slurmrestd:nodes"')"
	check_eq "slurmrestd instance: squeue and sinfo runs" "absent absent" \
		"$(mnum "$R" jobscope_slurm_command_runs_total 'command="squeue"') $(mnum "$R" jobscope_slurm_command_runs_total 'command="sinfo"')"
	# Its requests only: the commands it still runs (scontrol for licenses
	# and reservations) count 22.05's refused --json probe, as the command
	# instance's do.
	check_eq "slurmrestd instance: request errors (slurmrestd:*)" "" \
		"$(grep -E '^jobscope_slurm_command_errors_total\{.*command="slurmrestd:' "$R" | awk '$NF!=0' | head -3 | tr '\n' ' ')"
	check_eq "slurmrestd instance: jobscope_slurm_up all 1" "" "$(grep -E '^jobscope_slurm_up\{' "$R" | awk '$NF!=1' | head -3 | tr '\n' ' ')"
	check_eq "promtool check metrics (controller, slurmrestd)" "" "$(promtool check metrics <"$R" 2>&1 | head -3 | tr '\n' ' ')"
	log "slurmrestd instance: $(grep -m1 -o 'data_parser=[^ ]*' "$WORK/log/jobscope-restd.log"); $(grep -E '^jobscope_slurm_command_runs_total\{command="slurmrestd' "$R" | tr '\n' ' ')"
	restd_capture "$WORK/restd-capture"
	[ -n "${JOBSCOPE_E2E_CAPTURE:-}" ] && restd_capture "$JOBSCOPE_E2E_CAPTURE"
	return 0
}

# restd_body FILE PATH: GET PATH as RESTD_USER, the body into FILE (opened
# by this shell: RESTD_USER may not write there, nor reopen a pipe of
# root's as /dev/stdout), the HTTP status printed.
restd_body() {
	# shellcheck disable=SC2069 # the status (stderr) to the caller, the body to FILE
	as_restd curl -sS --max-time 20 --unix-socket "$RESTD_SOCK" -w '%{stderr}%{http_code}' "http://slurmrestd$2" 2>&1 >"$1"
}

# restd_capture DIR: slurmrestd's answers (every data_parser version it
# serves: /jobs, /nodes, /diag, then /jobs?update_time=<the full answer's
# last_update, or now when it prints none>) with squeue --json and sinfo
# --json of the same moment; restd-status.tsv has each file's URL and HTTP
# status.
restd_capture() {
	local d=$1 v p f code since st=$1/restd-status.tsv
	install -d "$d"
	printf 'file\thttp\turl\n' >"$st"
	squeue --json --all >"$d/squeue-e2e.json"
	sinfo --json -N >"$d/sinfo-e2e.json"
	for v in v0.0.36 v0.0.37 v0.0.38; do
		for p in jobs nodes diag; do
			f=restd-$p-$v-e2e.json
			code=$(restd_body "$d/$f" "/slurm/$v/$p")
			printf '%s\t%s\t%s\n' "$f" "$code" "/slurm/$v/$p" >>"$st"
			[ "$code" = 200 ] || rm -f "$d/$f"
		done
		[ -s "$d/restd-jobs-$v-e2e.json" ] || continue
		since=$(jq -r '.last_update // empty | if type == "object" then .number else . end' "$d/restd-jobs-$v-e2e.json" 2>/dev/null)
		[ -n "$since" ] || since=$(date +%s)
		f=restd-jobs-since-$v-e2e.json
		code=$(restd_body "$d/$f" "/slurm/$v/jobs?update_time=$since")
		printf '%s\t%s\t%s\n' "$f" "$code" "/slurm/$v/jobs?update_time=$since" >>"$st"
		[ -s "$d/$f" ] || rm -f "$d/$f"
	done
	# Who may ask (rest_auth/local's uid rule): root, and another user, on
	# a socket opened to all for these two requests only.
	chmod 0711 "$(dirname "$RESTD_SOCK")"
	chmod 0666 "$RESTD_SOCK"
	code=$(curl -sS --max-time 20 --unix-socket "$RESTD_SOCK" -o /dev/null -w '%{http_code}' http://slurmrestd/slurm/v0.0.38/ping 2>&1)
	printf '%s\t%s\t%s\n' "(root's request)" "$code" "/slurm/v0.0.38/ping" >>"$st"
	code=$(runuser -u alice -- curl -sS --max-time 20 --unix-socket "$RESTD_SOCK" -o /dev/null -w '%{http_code}' http://slurmrestd/slurm/v0.0.38/ping 2>&1)
	printf '%s\t%s\t%s\n' "(alice's request)" "$code" "/slurm/v0.0.38/ping" >>"$st"
	chmod 0750 "$(dirname "$RESTD_SOCK")"
	chmod 0600 "$RESTD_SOCK"
	log "slurmrestd answers captured into $d: $(tail -n +2 "$st" | awk -F'\t' '{printf "%s=%s ", $3, $2}')"
}
