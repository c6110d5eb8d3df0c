# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# `jobscope notify` end to end (sourced by test/e2e/run.sh; uses its helpers:
# check_*, row, skip, log, wait_for, submit, job_state, kill_pidfile, mnum,
# and WORK, BIN, HELP, PORT_NODE, CLUSTER). notify_e2e runs after run.sh's
# own checks, while Slurm and the node jobscope still run.
#
# The whole chain, on 127.0.0.1 only: a Prometheus of its own evaluates a
# copy of contrib/prometheus/jobscope-job-alert-rules.yml whose minimum
# runtimes and for: are shortened by substitution (the test checks the
# expressions, not their patience); Alertmanager routes to two receivers,
# one live (exim delivers to /var/mail/<user>) and one dry run; the live one
# cancels jobs for JobscopeJobCPUEfficiencyLow after a 20 s grace.
#
#   alice  nidle   2 cores, sleeps   CPU efficiency low: ONE mail naming the
#                                    job and the figure; cancelled after grace
#   alice  nforge  1 core, its environment says SLURM_JOB_USER=bob, then an
#                                    OOM kill; plus an alert posted straight to
#                                    Alertmanager with the label user="bob":
#                                    alice is written to, bob never
#   bob    nkeep   1 core, sleeps    nothing fires: never cancelled
#   alice  noom2   1 core, one OOM kill later: the same user, alert
#                                    (JobscopeJobOOMKills, no action) and
#                                    period as nforge: no new message
#   bob    nbob    2 cores, sleeps   while exim is down: counted as failed,
#                                    delivered once exim is back
#
# Counts are per job named in a message, never a mailbox's total: the
# receiver may also tell an owner their job was cancelled.
#
# Everything it starts has a pid file under $WORK/run; notify_teardown (also
# called by run.sh's teardown, so by its trap) stops them.

PORT_SMTP=19831 PORT_AM=19832 PORT_NTF=19833 PORT_NTF_DRY=19834 PORT_NPROM=19835
NW=$WORK/notify
NOTIFY_MIN_RUNTIME=20 # seconds, for every rule's minimum job runtime
NOTIFY_FOR=10s        # every rule's for:
NOTIFY_GRACE=20       # seconds before the cancel action

notify_teardown() {
	local p
	for p in notify-prometheus notify-am notify-live notify-dry notify-exim; do
		kill_pidfile "$WORK/run/$p.pid" 5
	done
}

# notify_install: Alertmanager, exim (delivering locally only, listening on
# 127.0.0.1 only) and python3 (to decode the mailboxes).
notify_install() {
	local pkgs=(prometheus-alertmanager exim4-daemon-light python3) missing=() p
	for p in "${pkgs[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
	if [ ${#missing[@]} -gt 0 ]; then
		log "apt-get install ${missing[*]}"
		apt-get install -y -qq --no-install-recommends "${missing[@]}" >>"$WORK/log/apt.log" 2>&1 || {
			row "notify: apt-get install ${missing[*]}" installed "failed (see $WORK/log/apt.log)" FAIL
			return 1
		}
	fi
	# Debian's way without debconf prompts: edit the answers, regenerate.
	if ! sed -i -e "s/^dc_eximconfig_configtype=.*/dc_eximconfig_configtype='local'/" \
		-e "s/^dc_local_interfaces=.*/dc_local_interfaces='127.0.0.1'/" /etc/exim4/update-exim4.conf.conf ||
		! update-exim4.conf; then
		row "notify: exim configured (local delivery, 127.0.0.1)" configured "update-exim4.conf failed" FAIL
		return 1
	fi
}

notify_exim_start() {
	# -oX: our port on the configured interface (127.0.0.1); -oP: our pid
	# file. The daemon detaches and writes it.
	/usr/sbin/exim4 -bd -oX "$PORT_SMTP" -oP "$WORK/run/notify-exim.pid" || return 1
	wait_for 15 "exim" bash -c "exec 3<>/dev/tcp/127.0.0.1/$PORT_SMTP"
}

notify_configs() {
	local f route
	# A fresh start: the receivers' ledgers of an earlier run (same job ids,
	# within the period) would hold this run's messages back.
	rm -rf "$NW"
	install -d -m 0700 "$NW" "$NW/state" "$NW/state-dry" "$NW/am"
	install -d -m 0755 "$NW/prom"
	head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$NW/token"
	chmod 0600 "$NW/token"
	: >"$NW/optout"
	# The shipped route's alert names, so the test exercises them.
	route=$(sed -n 's/.*alertname=~"\([^"]*\)".*/\1/p' "$ROOT/contrib/alertmanager/alertmanager.yml" | head -1)
	[ -n "$route" ] || route='JobscopeJob.*'
	cat >"$NW/alertmanager.yml" <<EOF
route:
  receiver: live
  group_by: [cluster, jobid]
  group_wait: 5s
  group_interval: 10s
  # Shorter than the cancel grace: the receiver acts on the first resend of
  # a still-firing alert after its grace (docs/notify.md, Actions).
  repeat_interval: 15s
  routes:
    # alice's CPU alerts also go to the dry-run receiver.
    - matchers: ['alertname="JobscopeJobCPUEfficiencyLow"', 'user="alice"']
      receiver: dry
      continue: true
    - matchers: ['alertname=~"$route"']
      receiver: live
receivers:
  - name: live
    webhook_configs:
      - url: http://127.0.0.1:$PORT_NTF/alertmanager
        send_resolved: true
        http_config:
          authorization: {type: Bearer, credentials_file: $NW/token}
  - name: dry
    webhook_configs:
      - url: http://127.0.0.1:$PORT_NTF_DRY/alertmanager
        send_resolved: true
        http_config:
          authorization: {type: Bearer, credentials_file: $NW/token}
EOF
	for f in live dry; do
		cat >"$NW/notify-$f.yml" <<EOF
listen: "127.0.0.1:$([ $f = live ] && echo "$PORT_NTF" || echo "$PORT_NTF_DRY")"
webhook_token_file: $NW/token
smtp: {host: 127.0.0.1, port: $PORT_SMTP, starttls: none, username: "", password_file: "", from: "jobscope@localhost", timeout: 5s}
address_template: "{user}@localhost"
dry_run: $([ $f = live ] && echo false || echo true)
period: 1h
digest_wait: 5s
opt_out_file: $NW/optout
report_command: "jobscope report {jobid}"
admins: ["root@localhost"]
state_dir: $NW/$([ $f = live ] && echo state || echo state-dry)
slurm: {bin_dir: ""}
retry: {initial: 5s, max: 20s}
EOF
	done
	cat >>"$NW/notify-live.yml" <<EOF
actions:
  JobscopeJobCPUEfficiencyLow: {action: cancel, grace: ${NOTIFY_GRACE}s}
EOF
	# The shipped rules, waiting NOTIFY_MIN_RUNTIME seconds of runtime and
	# NOTIFY_FOR instead of minutes to hours.
	sed -E -e "s/(\(time\(\) - job:slurm_job_first_seen:timestamp\)) > [0-9]+/\1 > $NOTIFY_MIN_RUNTIME/" \
		-e "s/^( +)for: .*/\1for: $NOTIFY_FOR/" \
		"$ROOT/contrib/prometheus/jobscope-job-alert-rules.yml" >"$NW/job-alert-rules.yml"
	check_eq "notify: every job alert's minimum runtime shortened to ${NOTIFY_MIN_RUNTIME}s" \
		"$(grep -c '^ *- alert:' "$NW/job-alert-rules.yml")" \
		"$(grep -c "job:slurm_job_first_seen:timestamp) > $NOTIFY_MIN_RUNTIME\$" "$NW/job-alert-rules.yml")"
	cat >"$NW/prometheus.yml" <<EOF
global:
  scrape_interval: 2s
  scrape_timeout: 2s
  evaluation_interval: 5s
rule_files:
  - $NW/job-alert-rules.yml
alerting:
  alertmanagers:
    - static_configs:
        - targets: ['127.0.0.1:$PORT_AM']
scrape_configs:
  - job_name: jobscope
    static_configs:
      - targets: ['127.0.0.1:$PORT_NODE']
EOF
}

# notify_start: exim, the two receivers, Alertmanager, Prometheus.
notify_start() {
	local p f port
	for p in $PORT_SMTP $PORT_AM $PORT_NTF $PORT_NTF_DRY $PORT_NPROM; do
		if bash -c "exec 3<>/dev/tcp/127.0.0.1/$p" 2>/dev/null; then
			row "notify: port $p on 127.0.0.1 free" free "taken by another program" FAIL
			return 1
		fi
	done
	notify_exim_start || {
		row "notify: exim listens on 127.0.0.1:$PORT_SMTP" listening "no (see /var/log/exim4/mainlog)" FAIL
		return 1
	}
	for f in live dry; do
		port=$PORT_NTF
		[ $f = dry ] && port=$PORT_NTF_DRY
		setsid "$BIN" notify --config "$NW/notify-$f.yml" >"$WORK/log/notify-$f.log" 2>&1 </dev/null &
		echo $! >"$WORK/run/notify-$f.pid"
		wait_for 30 "notify $f" curl -fsS -o /dev/null "http://127.0.0.1:$port/metrics" || {
			row "notify: receiver ($f) answers /metrics" answers "no (see $WORK/log/notify-$f.log)" FAIL
			return 1
		}
	done
	setsid prometheus-alertmanager --config.file="$NW/alertmanager.yml" --storage.path="$NW/am" \
		--web.listen-address=127.0.0.1:$PORT_AM --cluster.listen-address= \
		>"$WORK/log/notify-alertmanager.log" 2>&1 </dev/null &
	echo $! >"$WORK/run/notify-am.pid"
	setsid prometheus --config.file="$NW/prometheus.yml" --storage.tsdb.path="$NW/prom" \
		--web.listen-address=127.0.0.1:$PORT_NPROM >"$WORK/log/notify-prometheus.log" 2>&1 </dev/null &
	echo $! >"$WORK/run/notify-prometheus.pid"
	if ! wait_for 30 alertmanager curl -fsS -o /dev/null "http://127.0.0.1:$PORT_AM/-/ready" ||
		! wait_for 30 "notify prometheus" curl -fsS -o /dev/null "http://127.0.0.1:$PORT_NPROM/-/ready"; then
		row "notify: Alertmanager and Prometheus ready" ready "no (see $WORK/log/notify-*.log)" FAIL
		return 1
	fi
}

# mail_count USER [PHRASE...]: messages in USER's mailbox whose decoded
# subject and text contain every PHRASE as whole words (job 12 is not 123).
mail_count() {
	python3 - "/var/mail/$1" "${@:2}" <<'EOF' 2>/dev/null || echo 0
import email, email.policy, mailbox, re, sys
path, phrases = sys.argv[1], sys.argv[2:]
try:
    box = mailbox.mbox(path, factory=lambda f: email.message_from_binary_file(f, policy=email.policy.default), create=False)
    msgs = list(box)
except (FileNotFoundError, mailbox.NoSuchMailboxError):
    msgs = []
n = 0
for m in msgs:
    text = str(m.get("Subject", ""))
    for part in m.walk():
        if part.get_content_maintype() == "text":
            try:
                text += "\n" + part.get_content()
            except (LookupError, UnicodeError):
                text += "\n" + (part.get_payload(decode=True) or b"").decode("utf-8", "replace")
    if all(re.search(r"(?<![0-9A-Za-z])" + re.escape(p) + r"(?![0-9A-Za-z])", text) for p in phrases):
        n += 1
print(n)
EOF
}
has_mail() { [ "$(mail_count "$@")" -ge 1 ]; }

# nmetric PORT NAME [MATCH...]: a receiver's metric (0 when absent).
nmetric() {
	local f=$NW/metrics-$1.txt v
	curl -fsS --max-time 5 "http://127.0.0.1:$1/metrics" >"$f" 2>/dev/null || {
		echo unreachable
		return
	}
	v=$(mnum "$f" "${@:2}")
	[ "$v" = absent ] && v=0
	echo "$v"
}
# metric_ge PORT NAME MIN [MATCH...]: the receiver's metric is at least MIN.
metric_ge() {
	local v
	v=$(nmetric "$1" "$2" "${@:4}")
	[ "$v" != unreachable ] && awk -v v="$v" -v m="$3" 'BEGIN{exit !(v >= m)}'
}
queue_empty() { [ "$(nmetric "$PORT_NTF" jobscope_notify_queue_length)" = 0 ]; }

# am_alert JOBID ALERTNAME: that alert's startsAt (epoch seconds) while
# Alertmanager holds it active, else nothing.
am_alert() {
	curl -fsS -G --max-time 5 "http://127.0.0.1:$PORT_AM/api/v2/alerts" --data-urlencode "filter=jobid=\"$1\"" \
		--data-urlencode "filter=alertname=\"$2\"" 2>/dev/null |
		jq -r '[.[] | select(.status.state == "active") | .startsAt] | first // empty | sub("\\.[0-9]+"; "") | fromdateiso8601' 2>/dev/null
}
sacct_state() { sacct -n -X -P -j "$1" -o State 2>/dev/null | head -1; }
sacct_end() { date -d "$(sacct -n -X -P -j "$1" -o End 2>/dev/null | head -1)" +%s 2>/dev/null; }
job_start() { date -d "$(scontrol show job "$1" 2>/dev/null | sed -n 's/.*StartTime=\([^ ]*\).*/\1/p')" +%s 2>/dev/null; }
# job_env JOBID VAR: the values VAR has in the job's processes, sorted.
job_env() {
	local p
	# listpids names -1 for a step whose pids it cannot list; a process may
	# also end between the listing and the read, so errors stay quiet.
	for p in $(scontrol listpids "$1" 2>/dev/null | awk 'NR > 1 && $1 > 0 {print $1}'); do
		tr '\0' '\n' 2>/dev/null <"/proc/$p/environ" | sed -n "s/^$2=//p"
	done | sort -u | paste -sd, -
}
# idle_mailed: alice has mail about N_IDLE; meanwhile T_ALERT keeps when
# Alertmanager's alert for it started (gone once the job is cancelled).
idle_mailed() {
	[ -n "$T_ALERT" ] || T_ALERT=$(am_alert "$N_IDLE" JobscopeJobCPUEfficiencyLow)
	has_mail alice "$N_IDLE"
}

# post_forged_alert JOBID: an alert posted straight to Alertmanager that
# names bob as the owner of alice's job, as a label from a job's own
# environment could (jobscope without props or squeue). The receiver asks
# Slurm.
post_forged_alert() {
	local now end
	now=$(date -u +%Y-%m-%dT%H:%M:%SZ)
	end=$(date -u -d '+3 min' +%Y-%m-%dT%H:%M:%SZ)
	curl -fsS --max-time 5 -X POST -H 'Content-Type: application/json' "http://127.0.0.1:$PORT_AM/api/v2/alerts" -d "[{
		\"labels\": {\"alertname\": \"JobscopeJobOOMKills\", \"jobid\": \"$1\", \"cluster\": \"$CLUSTER\",
			\"job_key\": \"$CLUSTER/$1/0\", \"user\": \"bob\", \"account\": \"chemistry\", \"severity\": \"critical\"},
		\"annotations\": {\"summary\": \"Job $1: 1 process(es) killed for lack of memory\",
			\"description\": \"forged by the e2e: the user label says bob\",
			\"value\": \"1 OOM kill(s) in the last 10m\", \"value_raw\": \"1\"},
		\"startsAt\": \"$now\", \"endsAt\": \"$end\"}]"
}

notify_jobs_write() {
	# The job's own environment names bob (and Slurm's SLURM_JOB_USER is
	# overwritten in the processes after it), then one process is OOM-killed
	# once Prometheus has seen the job alive, so increase() sees the kill.
	cat >"$WORK/jobs/notify-forge.sh" <<'EOF'
#!/bin/sh
export SLURM_JOB_USER=bob SLURM_JOB_ACCOUNT=chemistry USER=bob LOGNAME=bob
sleep 25
perl -e '$x = ""; vec($x, 300*1024*1024 - 1, 8) = 1'
echo "oom rc=$?"
exec sleep 600
EOF
	cat >"$WORK/jobs/notify-oom.sh" <<'EOF'
#!/bin/sh
sleep 25
perl -e '$x = ""; vec($x, 300*1024*1024 - 1, 8) = 1'
echo "oom rc=$?"
exec sleep 600
EOF
	chmod 755 "$WORK/jobs/notify-forge.sh" "$WORK/jobs/notify-oom.sh"
}

notify_e2e() {
	local code others j st t_start t_mail t_end sup0 t_down t_up
	T_ALERT=""
	if ! grep -q 'jobscope notify ' <<<"$HELP"; then
		skip "notify: jobscope notify" "not in this build's --help"
		return 0
	fi
	log "jobscope notify"
	notify_install || return 0
	rm -f /var/mail/alice /var/mail/bob
	notify_configs
	notify_jobs_write
	if ! notify_start; then
		notify_teardown
		return 0
	fi
	# Jobs that ran before this phase: none may be cancelled by it.
	others=$(squeue -h -t running -o %i | paste -sd' ' -)

	# The webhook wants the token.
	code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 -X POST -H 'Content-Type: application/json' \
		"http://127.0.0.1:$PORT_NTF/alertmanager" -d '{"version":"4","status":"firing","alerts":[]}')
	check_eq "notify: webhook without a token refused" yes "$([[ $code =~ ^40[13]$ ]] && echo yes || echo "no ($code)")"
	code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 -X POST -H 'Content-Type: application/json' \
		-H 'Authorization: Bearer wrong' "http://127.0.0.1:$PORT_NTF/alertmanager" -d '{"version":"4","status":"firing","alerts":[]}')
	check_eq "notify: webhook with a wrong token refused" yes "$([[ $code =~ ^40[13]$ ]] && echo yes || echo "no ($code)")"

	N_IDLE=$(submit alice physics debug sleep.sh -n1 -c2 --mem=50M -J nidle)
	N_FORGE=$(submit alice physics debug notify-forge.sh -n1 -c1 --mem=100M -J nforge --export=ALL,SLURM_JOB_USER=bob)
	N_KEEP=$(submit bob chemistry debug sleep.sh -n1 -c1 --mem=50M -J nkeep)
	for j in N_IDLE N_FORGE N_KEEP; do
		[[ ${!j} =~ ^[0-9]+$ ]] || {
			row "notify: sbatch $j" "a job id" "${!j}" FAIL
			notify_teardown
			return 0
		}
	done
	log "notify jobs: idle=$N_IDLE forge=$N_FORGE keep=$N_KEEP"
	wait_for 60 "notify jobs running" sh -c "[ \"\$(squeue -h -t running -j $N_IDLE,$N_FORGE,$N_KEEP | wc -l)\" = 3 ]" ||
		row "notify: jobs running" 3 "$(squeue -h -t running -j "$N_IDLE,$N_FORGE,$N_KEEP" | wc -l)" FAIL
	t_start=$(job_start "$N_IDLE")
	post_forged_alert "$N_FORGE" >/dev/null || row "notify: forged alert posted to Alertmanager" posted "refused" FAIL

	# 1. The idle 2-core job: one message to alice naming the job and the figure.
	if wait_for 150 "alice's mail about $N_IDLE" idle_mailed; then
		t_mail=$(date +%s)
		check_within "notify: seconds from job start to alice's mail" 0 150 "$((t_mail - ${t_start:-t_mail}))"
	else
		row "notify: alice gets mail about idle job $N_IDLE" "within 150 s" "none (firing: $(am_alert "$N_IDLE" JobscopeJobCPUEfficiencyLow))" FAIL
	fi
	sleep 3 # a second copy of the same digest would be here by now
	check_eq "notify: one message to alice names job $N_IDLE" 1 "$(mail_count alice "$N_IDLE")"
	check_eq "notify: it gives the figure (CPU efficiency ... on 2 cores)" 1 "$(mail_count alice "$N_IDLE" "CPU efficiency" "2 cores")"

	# 2. The forged owner: alice hears of her job, bob never does.
	wait_for 90 "alice's mail about $N_FORGE" has_mail alice "$N_FORGE"
	check_ge "notify: alice (the owner in Slurm) gets mail about $N_FORGE" 1 "$(mail_count alice "$N_FORGE")"
	# The forgery is real: the job's processes say bob (the batch shell
	# itself keeps what slurmd gave it).
	check_eq "notify: job $N_FORGE's processes name SLURM_JOB_USER=bob" yes \
		"$([[ ,$(job_env "$N_FORGE" SLURM_JOB_USER), == *,bob,* ]] && echo yes || echo "no ($(job_env "$N_FORGE" SLURM_JOB_USER))")"

	# 3. The dry-run receiver had the same CPU alert: counted, not sent.
	wait_for 30 "dry run counted" metric_ge "$PORT_NTF_DRY" jobscope_notify_messages_total 1 'result="dry_run"'
	check_eq "notify: dry run counts one message" 1 "$(nmetric "$PORT_NTF_DRY" jobscope_notify_messages_total 'result="dry_run"')"
	check_eq "notify: dry run sends none" 0 "$(nmetric "$PORT_NTF_DRY" jobscope_notify_messages_total 'result="sent"')"

	# 4. SMTP down: bob's first message fails, is counted, and arrives when
	# exim is back. Meanwhile alice's second OOM job: same alert, same
	# period, no new message.
	kill_pidfile "$WORK/run/notify-exim.pid" 5
	t_down=$(date +%s)
	sup0=$(nmetric "$PORT_NTF" jobscope_notify_messages_total 'result="suppressed"')
	N_OOM2=$(submit alice physics debug notify-oom.sh -n1 -c1 --mem=100M -J noom2)
	N_BOB=$(submit bob chemistry debug sleep.sh -n1 -c2 --mem=50M -J nbob)
	log "notify jobs: oom2=$N_OOM2 bob=$N_BOB; exim stopped"
	# A failed try is an smtp error and a retry; messages_total{result="failed"}
	# counts only a message given up after its last try, which must not
	# happen here.
	if wait_for 90 "a failed send" metric_ge "$PORT_NTF" jobscope_notify_errors_total 1 'cause="smtp"'; then
		check_ge "notify: the failed send is counted (errors_total{cause=\"smtp\"})" 1 \
			"$(nmetric "$PORT_NTF" jobscope_notify_errors_total 'cause="smtp"')"
	else
		row "notify: the failed send is counted (errors_total{cause=\"smtp\"})" ">= 1" \
			"$(nmetric "$PORT_NTF" jobscope_notify_errors_total 'cause="smtp"')" FAIL
	fi
	check_eq "notify: nothing reaches bob while exim is down" 0 "$(mail_count bob "$N_BOB")"
	notify_exim_start || row "notify: exim restarts" listening "no" FAIL
	t_up=$(date +%s)
	log "exim down for $((t_up - t_down)) s"
	if wait_for 90 "bob's mail after the outage" has_mail bob "$N_BOB"; then
		row "notify: bob's message arrives after exim is back" "<= 90 s" "$(($(date +%s) - t_up)) s" PASS
	else
		row "notify: bob's message arrives after exim is back" "<= 90 s" "none" FAIL
	fi
	wait_for 30 "retry queue empty" queue_empty
	check_eq "notify: retry queue empty again" 0 "$(nmetric "$PORT_NTF" jobscope_notify_queue_length)"
	check_eq "notify: no message given up (messages_total{result=\"failed\"})" 0 \
		"$(nmetric "$PORT_NTF" jobscope_notify_messages_total 'result="failed"')"

	# alice's second OOM job fired the alert she already had a message
	# about: wait for Alertmanager to hold it, then group_wait +
	# digest_wait + a margin.
	if wait_for 120 "alert for $N_OOM2" sh -c "[ -n \"\$(curl -fsS -G http://127.0.0.1:$PORT_AM/api/v2/alerts --data-urlencode 'filter=jobid=\"$N_OOM2\"' | jq -r '.[0].startsAt // empty')\" ]"; then
		sleep 20
		check_eq "notify: a second alert in the period adds no message (none names $N_OOM2)" 0 "$(mail_count alice "$N_OOM2")"
		check_ge "notify: suppressed messages counted" 1 \
			"$(awk -v a="$(nmetric "$PORT_NTF" jobscope_notify_messages_total 'result="suppressed"')" -v b="$sup0" 'BEGIN{print a-b}')"
	else
		row "notify: alice's second OOM job fires" "an alert" "none" FAIL
	fi

	# 5. The cancel action: the idle job after its grace, no other job.
	wait_for 60 "$N_IDLE cancelled" sh -c "sacct -n -X -P -j $N_IDLE -o State | grep -q '^CANCELLED'"
	st=$(sacct_state "$N_IDLE")
	check_eq "notify: idle job $N_IDLE cancelled (action)" CANCELLED "${st%% *}"
	t_end=$(sacct_end "$N_IDLE")
	if [ -n "$T_ALERT" ] && [ -n "$t_end" ]; then
		check_ge "notify: cancelled after its ${NOTIFY_GRACE}s grace (s from alert start)" "$NOTIFY_GRACE" "$((t_end - T_ALERT))"
	else
		row "notify: cancelled after its grace" ">= ${NOTIFY_GRACE}s" "alert start '${T_ALERT}' end '${t_end}'" FAIL
	fi
	check_ge "notify: actions_total{action=\"cancel\"} counts it" 1 "$(nmetric "$PORT_NTF" jobscope_notify_actions_total 'action="cancel"')"
	check_ge "notify: alerts_received_total{alertname=\"JobscopeJobCPUEfficiencyLow\"}" 1 \
		"$(nmetric "$PORT_NTF" jobscope_notify_alerts_received_total 'alertname="JobscopeJobCPUEfficiencyLow"')"
	check_eq "notify: job $N_KEEP (no alert) still running" RUNNING "$(job_state "$N_KEEP")"
	check_eq "notify: job $N_FORGE (another alert, no action) still running" RUNNING "$(job_state "$N_FORGE")"
	for j in $others; do
		st=$(sacct_state "$j")
		check_eq "notify: earlier job $j not cancelled" no "$([[ $st == CANCELLED* ]] && echo "yes ($st)" || echo no)"
	done
	# At the end, after every delay: bob never heard of alice's job.
	check_eq "notify: bob (the forged user) never gets mail about $N_FORGE" 0 "$(mail_count bob "$N_FORGE")"
	check_eq "notify: Prometheus evaluates the job rules without error" "" \
		"$(curl -fsS "http://127.0.0.1:$PORT_NPROM/api/v1/rules" | jq -r '[.data.groups[].rules[] | select(.health != "ok") | "\(.name):\(.lastError)"] | join(",")')"
	log "notify: alice $(mail_count alice) message(s), bob $(mail_count bob); live: $(grep -E '^jobscope_notify_(messages|actions|errors)_total' "$NW/metrics-$PORT_NTF.txt" 2>/dev/null | tr '\n' ' ')"
	notify_teardown
	scancel --quiet "$N_OOM2" "$N_BOB" "$N_FORGE" "$N_KEEP" 2>/dev/null
}
