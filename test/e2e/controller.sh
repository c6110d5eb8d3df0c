# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# Controller mode in depth, for test/e2e/run.sh (sourced; uses its helpers
# and variables): per-node series with a drain reason, a reservation, a
# license pool, queue waits, ended jobs from sacct, the text form (the
# JSON-less fallback) against JSON on the same cluster, and what jobscope's
# sacct queries cost slurmdbd.
#
# JOBSCOPE_E2E_CAPTURE=DIR also saves, at the busiest moment, the output of
# every command controller mode runs (both forms) into DIR: the "busy"
# captures of testdata/slurm/22.05 were made so.

PORT_TXT=19821

# ctl_text_start: a second controller instance, text form only.
ctl_text_start() {
	has_collector slurm_node || return 0
	curl -s -o /dev/null --max-time 2 "http://127.0.0.1:$PORT_TXT/" && die "port $PORT_TXT on 127.0.0.1 is taken by another program"
	local slow=()
	has_flag slurm.slow-poll-interval && slow=(--slurm.slow-poll-interval=1s)
	setsid "$BIN" --mode=controller --slurm.format=text --slurm.poll-interval=1s "${slow[@]}" --collector.slurm_sacct.since=1h \
		--web.listen-address=127.0.0.1:$PORT_TXT >"$WORK/log/jobscope-ctltext.log" 2>&1 </dev/null &
	echo $! >"$WORK/run/jobscope-ctltext.pid"
	need 30 "jobscope controller (text) /metrics" curl -fsS -o /dev/null "http://127.0.0.1:$PORT_TXT/metrics"
}

# ctl_compare NAME JSONFILE TEXTFILE FAMILY-REGEX: the series of the families
# must be the same, values included, in both forms.
ctl_compare() {
	local a b
	a=$(grep -E "^($4)(\{| )" "$2" | sort)
	b=$(grep -E "^($4)(\{| )" "$3" | sort)
	if [ -n "$a" ] && [ "$a" = "$b" ]; then
		row "$1" "same in text and JSON" "$(printf '%s\n' "$a" | wc -l) series" PASS
	else
		row "$1" "same in text and JSON" "$(diff <(printf '%s\n' "$a") <(printf '%s\n' "$b") | grep '^[<>]' | head -2 | tr '\n' ' ')" FAIL
	fi
}

# alert_state NAME MATCH: the states of alert NAME whose labels contain MATCH
# (a jq expression on .labels), comma-joined.
alert_state() {
	curl -fsS "http://127.0.0.1:$PORT_PROM/api/v1/alerts" |
		jq -r --arg a "$1" "[.data.alerts[] | select(.labels.alertname == \$a and ($2)) | .state] | unique | join(\",\")"
}

alert_present() { [ -n "$(alert_state "$@")" ]; }

# sacct_snapshot DVAR RVAR: slurmdbd's sacct queries (DVAR) and the sacct runs
# both controller instances counted (RVAR), read at one moment: the scrapes
# are taken between two equal readings of slurmdbd's counter, up to 10 tries.
sacct_snapshot() {
	local -n _d=$1 _r=$2
	local i before
	for i in $(seq 10); do
		before=$(dbd_calls)
		scrape $PORT_CTL "$C"
		scrape $PORT_TXT "$T"
		_d=$(dbd_calls)
		[ "$before" = "$_d" ] && break
	done
	_r=$(($(mnum "$C" jobscope_slurm_command_runs_total 'command="sacct"') + $(mnum "$T" jobscope_slurm_command_runs_total 'command="sacct"')))
}
# dbd_calls: DBD_GET_JOBS_COND (sacct's query) calls slurmdbd counted so far.
dbd_calls() {
	sacctmgr show stats 2>/dev/null | awk '$1=="DBD_GET_JOBS_COND" && match($0, /count:[0-9]+/){print substr($0, RSTART+6, RLENGTH-6)}'
}

# ctl_capture DIR: every command controller mode runs, as it runs them.
ctl_capture() {
	local d=$1 fmt states='BF,CA,CD,DL,F,NF,OOM,PR,TO'
	install -d "$d"
	fmt='JobArrayID:0|,JobID:0|,ArrayJobID:0|,ArrayTaskID:0|,State:0|,Reason:0|,Partition:0|,UserName:0|,UserID:0|,Account:0|,QOS:0|,NumCPUs:0|,NumNodes:0|,tres-per-node:0|,tres-alloc:0|,SubmitTime:0|,StartTime:0|,Name:0'
	squeue --json --all >"$d/squeue-busy.json"
	squeue -h -a -r -O "$fmt" >"$d/squeue-O-busy.txt"
	sinfo --json -N >"$d/sinfo-busy.json"
	scontrol -o show node >"$d/scontrol-show-node-o-busy.txt"
	scontrol -o show reservation >"$d/scontrol-show-res-busy.txt"
	scontrol -o show licenses >"$d/scontrol-show-lic-busy.txt"
	# 22.05 has no --json here: what it says instead is the capture.
	scontrol show reservation --json >"$d/scontrol-show-res-busy.json" 2>"$d/scontrol-show-res-busy.json.stderr" ||
		rm "$d/scontrol-show-res-busy.json"
	scontrol show licenses --json >"$d/scontrol-show-lic-busy.json" 2>"$d/scontrol-show-lic-busy.json.stderr" ||
		rm "$d/scontrol-show-lic-busy.json"
	sshare -a -P -l >"$d/sshare-busy.txt"
	sdiag >"$d/sdiag-busy.txt"
	sacct -a -X -P -s "$states" -S "$(date -d @"$T0" +%Y-%m-%dT%H:%M:%S)" -E now \
		--format=JobID,JobIDRaw,State,Partition,Account,Submit,End >"$d/sacct-X-busy.txt"
	date +%Y-%m-%dT%H:%M:%S%z >"$d/captured-at.txt"
	log "captured controller commands into $d"
}

ctl_depth() {
	if ! has_collector slurm_node; then
		skip "controller depth" "no slurm_node collector in this build"
		return 0
	fi
	local C=$WORK/metrics/ctl-json.txt T=$WORK/metrics/ctl-text.txt W=$WORK/metrics/ctl-wait.txt
	local wait_s=8 res_start sub0 sub0t c0 s0 c1 s1 truth f

	# A license pool created at run time (remote: slurmdbd's resource) and a
	# maintenance window starting in 30 minutes on the busy node.
	sacctmgr -i add resource name=e2elic server=flex count=4 cluster="$CLUSTER" percentallowed=100 type=license >/dev/null ||
		die "sacctmgr add resource failed"
	need 30 "license e2elic@flex in slurmctld" sh -c "scontrol -o show licenses | grep -q 'LicenseName=e2elic@flex'"
	scontrol create reservation ReservationName=e2e_maint StartTime=now+30minutes Duration=60 Nodes=ALL Users=root \
		Flags=maint,ignore_jobs >/dev/null || die "scontrol create reservation failed"
	res_start=$(date -d "$(scontrol -o show reservation e2e_maint | sed -n 's/.*StartTime=\([^ ]*\).*/\1/p')" +%s)

	# Queue wait: a job held wait_s seconds, then released; while it runs it
	# holds the whole license pool.
	printf '#!/bin/sh\nexec sleep 12\n' >"$WORK/jobs/pause.sh"
	chmod 755 "$WORK/jobs/pause.sh"
	sleep 2
	scrape $PORT_CTL "$W" || die "controller scrape failed"
	sub0=$(mnum "$W" slurm_queue_jobs_submitted_total)
	scrape $PORT_TXT "$W.text" || die "controller (text) scrape failed"
	sub0t=$(mnum "$W.text" slurm_queue_jobs_submitted_total)
	c0=$(mval "$W" slurm_queue_started_wait_seconds_count 'partition="debug"' 'qos="normal"')
	s0=$(mval "$W" slurm_queue_started_wait_seconds_sum 'partition="debug"' 'qos="normal"')
	J_WAIT=$(submit alice physics debug pause.sh -n1 --mem=20M --hold -L e2elic@flex:4 -J waiter)
	sleep "$wait_s"
	scontrol release "$J_WAIT"
	need 60 "released job running" sh -c "[ \"\$(squeue -h -j $J_WAIT -o %T)\" = RUNNING ]"
	sleep 2
	scrape $PORT_CTL "$C" || die "controller scrape failed"
	truth=$(scontrol -o show job "$J_WAIT" | tr ' ' '\n' | sed -n 's/^\(SubmitTime\|StartTime\)=//p' |
		while read -r t; do date -d "$t" +%s; done | paste -sd' ' - | awk '{print $2-$1}')
	c1=$(mval "$C" slurm_queue_started_wait_seconds_count 'partition="debug"' 'qos="normal"')
	s1=$(mval "$C" slurm_queue_started_wait_seconds_sum 'partition="debug"' 'qos="normal"')
	check_eq "queue wait: the released job observed once" 1 "$(awk -v a="$c0" -v b="$c1" 'BEGIN{print b-a}')"
	check_ge "queue wait: held ${wait_s}s, its wait (s)" "$wait_s" "$(awk -v a="$s0" -v b="$s1" 'BEGIN{print b-a}')"
	check_close "queue wait: == StartTime - SubmitTime" "$truth" "$(awk -v a="$s0" -v b="$s1" 'BEGIN{print b-a}')" 0 1
	check_eq "license e2elic@flex: total" 4 "$(mnum "$C" slurm_license_configured 'license="e2elic@flex"')"
	check_eq "license e2elic@flex: used by the running job" 4 "$(mnum "$C" slurm_license_used 'license="e2elic@flex"')"
	wait_for 10 "alert SlurmLicensePoolExhausted" alert_present SlurmLicensePoolExhausted '.labels.license == "e2elic@flex"' 
	check_eq "prometheus: alert SlurmLicensePoolExhausted for e2elic@flex" pending \
		"$(alert_state SlurmLicensePoolExhausted '.labels.license == "e2elic@flex"')"

	# Drain the node with a reason; jobs submitted now pend: one on the drain,
	# one held without --mem (Slurm's default memory applies), an array.
	scontrol update NodeName="$NODE" State=DRAIN Reason="e2e: disk replaced, burn-in" || die "drain failed"
	J_AD=$(submit bob chemistry batch sleep.sh -n1 --mem=20M -J afterdrain)
	J_NOMEM=$(runuser -u alice -- env SLURM_CONF="$SLURM_CONF" sbatch --parsable -A physics -p debug -t 10 --hold \
		--chdir="$WORK/jobs" -o "$WORK/out/%j.out" -J nomem "$WORK/jobs/sleep.sh" | cut -d';' -f1)
	J_ARR=$(submit bob chemistry batch sleep.sh -n1 --mem=20M --array=1-3 --hold -J arr)
	need 30 "pending reason of job $J_AD" sh -c "squeue -h -j $J_AD -o %r | grep -qv '^None$'"
	need 30 "waiter done" sh -c "[ -z \"\$(squeue -h -j $J_WAIT -o %T)\" ]"
	sleep 3 # both instances poll past the last change
	scrape $PORT_CTL "$C" || die "controller scrape failed"
	scrape $PORT_TXT "$T" || die "controller (text) scrape failed"
	[ -n "${JOBSCOPE_E2E_CAPTURE:-}" ] && ctl_capture "$JOBSCOPE_E2E_CAPTURE"
	# The slurmrestd source at this moment: a drained node, jobs running,
	# pending on the drain, held (test/e2e/restd.sh).
	restd_compare "$WORK/metrics/ctl-json-restd.txt"

	local form base
	for f in "$C" "$T"; do
		form=JSON base=$sub0
		[ "$f" = "$T" ] && form=text base=$sub0t
		check_eq "node info ($form): $NODE state" draining "$(mlabel "$f" slurm_cluster_node_info "node=\"$NODE\"" state)"
		check_eq "node info ($form): drain reason" "e2e: disk replaced, burn-in" "$(mlabel "$f" slurm_cluster_node_info "node=\"$NODE\"" reason)"
		check_eq "reservation ($form): e2e_maint start" "$res_start" \
			"$(mval "$f" slurm_reservation_start_timestamp_seconds 'reservation="e2e_maint"' | awk '{printf "%.0f", $1}')"
		check_eq "reservation ($form): e2e_maint state/flags" "inactive/maint,ignore_jobs,spec_nodes,all_nodes" \
			"$(mlabel "$f" slurm_reservation_info 'reservation="e2e_maint"' state)/$(mlabel "$f" slurm_reservation_info 'reservation="e2e_maint"' flags)"
		check_eq "reservation ($form): CPUs == node CPUs" "$(sinfo -h -n "$NODE" -o %c)" "$(mnum "$f" slurm_reservation_cpus 'reservation="e2e_maint"')"
		check_ge "reservation ($form): CPUs allocated on its nodes" 1 "$(mval "$f" slurm_reservation_cpus_allocated 'reservation="e2e_maint"')"
		check_eq "pending reason ($form): job $J_AD on the drained node" 1 "$(mnum "$f" slurm_queue_jobs_pending 'partition="batch"' 'reason="Resources"')"
		check_eq "submitted ($form): 6 jobs (waiter, afterdrain, nomem, 3 array tasks)" 6 \
			"$(awk -v a="$base" -v b="$(mnum "$f" slurm_queue_jobs_submitted_total)" 'BEGIN{print b-a}')"
	done
	check_eq "pending reasons (text): codes only, no description" "" \
		"$(sed -n 's/^slurm_queue_jobs_pending{.*reason="\([^"]*\)".*/\1/p' "$T" | grep -vE '^[A-Za-z0-9_]+$' | head -1)"
	ctl_compare "text vs JSON: queue by partition/user/account" "$C" "$T" 'slurm_queue_(jobs|user_jobs|account_jobs)(_cpus|_memory_bytes|_gpus)?|slurm_queue_jobs_pending|slurm_queue_pending_reasons'
	ctl_compare "text vs JSON: per-node series" "$C" "$T" 'slurm_cluster_node_(info|cpus_configured|cpus_allocated|memory_real_bytes|memory_allocated_bytes|gpus_configured|gpus_allocated)'
	ctl_compare "text vs JSON: reservations and licenses" "$C" "$T" 'slurm_reservation_[a-z_]+|slurm_license_[a-z]+'
	check_ge "pending memory of the job without --mem (Slurm's default, bytes)" 1048576 \
		"$(awk -v m="$(mval "$C" slurm_queue_jobs_memory_bytes 'partition="debug"' 'state="pending"')" 'BEGIN{print m - 100*1048576}')"
	wait_for 10 "node alert" alert_present SlurmNodeDrainedOrDown ".labels.node == \"$NODE\"" 
	check_eq "prometheus: alert SlurmNodeDrainedOrDown for $NODE" pending "$(alert_state SlurmNodeDrainedOrDown ".labels.node == \"$NODE\"")"
	check_eq "prometheus: alert SlurmReservationStartsOnBusyNodes for e2e_maint" pending \
		"$(alert_state SlurmReservationStartsOnBusyNodes '.labels.reservation == "e2e_maint"')"

	# The array's tasks, cancelled before any started: sacct prints one
	# record for them, counted as the tasks it stands for.
	local e0 e1 rec
	e0=$(mval "$C" slurm_jobs_ended_total 'partition="batch"' 'account="chemistry"' 'state="cancelled"')
	scancel "$J_ARR"
	need 30 "sacct record of array $J_ARR" sh -c "sacct -n -X -P -a -j $J_ARR -o JobID,State | grep -q CANCELLED"
	rec=$(sacct -n -X -P -a -j "$J_ARR" -o JobID | paste -sd, -)
	log "sacct records of array $J_ARR: $rec"
	sleep 3
	scrape $PORT_CTL "$C" || die "controller scrape failed"
	e1=$(mval "$C" slurm_jobs_ended_total 'partition="batch"' 'account="chemistry"' 'state="cancelled"')
	check_eq "ended jobs: array of 3 cancelled pending ($rec)" 3 "$(awk -v a="$e0" -v b="$e1" 'BEGIN{print b-a}')"

	# slurmdbd's load: over a quiet window, every sacct query slurmdbd
	# served came from the two jobscope instances, one per poll each.
	local d0 d1 r0 r1 n0 n1 t0 t1
	# Both instances poll every second, so a sacct may start between the
	# scrapes and the reading of slurmdbd's counter: on a busy machine the
	# two counts then differ by that one run. sacct_snapshot takes the
	# scrapes between two equal readings of slurmdbd's counter (a few tries,
	# bounded), so both counts describe one moment.
	sacct_snapshot d0 r0
	n0=$(mval "$C" jobscope_slurm_sacct_records_total)
	t0=$(date +%s)
	sleep 10
	sacct_snapshot d1 r1
	t1=$(date +%s)
	n1=$(mval "$C" jobscope_slurm_sacct_records_total)
	check_eq "slurmdbd: DBD_GET_JOBS_COND calls over $((t1 - t0))s == jobscope's sacct runs" "$((r1 - r0))" "$((d1 - d0))"
	# A poll is due a second after the last; scrapes come every second, so
	# about every other one starts a poll.
	check_ge "slurmdbd: sacct runs over $((t1 - t0))s (1s poll)" "$(((t1 - t0) / 2 - 1))" "$((r1 - r0))"
	log "slurmdbd: $((d1 - d0)) sacct queries in $((t1 - t0)) s, $(awk -v a="$n0" -v b="$n1" 'BEGIN{print b-a}') records returned to the JSON instance; window $(mnum "$C" jobscope_slurm_sacct_window_seconds) s"
	check_close "sacct window: time since the last query + 2m overlap (s)" 121 "$(mnum "$C" jobscope_slurm_sacct_window_seconds)" 0 2
	check_eq "sacct: caught up with --collector.slurm_sacct.since" 0 "$(mnum "$C" jobscope_slurm_sacct_behind_seconds)"

	# Back to normal for the checks that follow: no job of ours left.
	scancel "$J_AD" "$J_NOMEM" 2>/dev/null
	scontrol update NodeName="$NODE" State=RESUME
	scontrol delete reservation e2e_maint
	need 30 "extra jobs gone" sh -c "[ -z \"\$(squeue -h -j $J_AD,$J_NOMEM -o %i 2>/dev/null)\" ]"
	sleep 3 # a poll and a Prometheus scrape past the cancels, for the checks that follow
}
