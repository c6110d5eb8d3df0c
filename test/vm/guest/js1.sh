# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# Sourced inside a test VM with slurmdbd (Slurm 23.02 and later store an
# AdminComment as sent): job summaries in Slurm's accounting (docs/report.md,
# "Job summaries in Slurm's accounting"). The writer runs as packaged
# (jobscope-summaries.service as the jobscope user, an operator in Slurm,
# /etc/jobscope/report.yml naming the guest's Prometheus); the summary it
# stores must agree with sacct; a second run writes nothing; an operator's
# comment stays; once Prometheus has deleted the job's series, `jobscope
# report` answers from the summary. Uses slurm.sh, jobscope.sh, assert.sh.

JS1_KEEP="reviewed by ops: keep"
JS1_MIB=400 # what the summarized job holds: its memory peak is this and little else
JS1_BURN_S=20

# js1_submit: a job that holds JS1_MIB MiB while it burns a core for
# JS1_BURN_S s in its batch step, then idles past two scrapes (so the last
# CPU second is in Prometheus) and ends; and a short job whose comment an
# operator sets. Both run alongside the mix and have ended by js1_check.
js1_submit() {
	cat >/var/tmp/jobs/js1.sh <<'EOF'
#!/bin/sh
cg=/sys/fs/cgroup$(sed -n 's/^0:://p' /proc/self/cgroup)
job=${cg%%/step_*}
perl -e '$x = ""; vec($x, $ENV{JS1_MIB}*1024*1024 - 1, 8) = 1; $t = time + $ENV{JS1_BURN_S}; while (time < $t) {} print "summarized\n"'
# The job's cgroup after the burn: from here it idles past two scrapes, so
# the last scrape has at least this.
echo "burned_usec=$(awk '$1 == "usage_usec" {print $2}' "$job/cpu.stat" 2>/dev/null)"
sleep 12
# slurmstepd runs in the job's cgroup (step_*/slurm) and its CPU time is
# in the job's cpu.stat, not in sacct's TotalCPU: the job's own record of
# it, and of its cgroup, just before it ends, for the comparison.
echo "stepd_usec=$(cat "$job"/step_*/slurm/cpu.stat 2>/dev/null | awk '$1 == "usage_usec" {s += $2} END {print s + 0}')"
echo "job_usec=$(awk '$1 == "usage_usec" {print $2}' "$job/cpu.stat" 2>/dev/null)"
EOF
	chmod 755 /var/tmp/jobs/js1.sh
	J_JS1=$(submit alice physics debug js1.sh -n1 --mem=$((JS1_MIB + 150))M -J summarized \
		--export=ALL,JS1_MIB=$JS1_MIB,JS1_BURN_S=$JS1_BURN_S)
	J_KEEP=$(submit bob chemistry batch true.sh -n1 --mem=20M -J kept)
	[[ $J_JS1 =~ ^[0-9]+$ && $J_KEEP =~ ^[0-9]+$ ]] || die "sbatch for the summary jobs failed: '$J_JS1' '$J_KEEP'"
}

# js1_ended: both jobs ended, as slurmdbd has them (squeue -j lists
# ended jobs too).
js1_ended() {
	[ "$(sacct -n -X -P -j "$J_JS1,$J_KEEP" -o State | grep -cE '^(COMPLETED|FAILED|CANCELLED|TIMEOUT|OUT_OF_MEMORY)')" = 2 ]
}

# js1_comment ID: the AdminComment as the issue reads it.
js1_comment() { sacct -j "$1" -n -X -P -o AdminComment; }
# js1_secs "[D-][HH:]MM:SS[.mmm]": seconds.
js1_secs() {
	awk -F'[-:]' '{ n=NF; s=$n; if(n>=2) s+=$(n-1)*60; if(n>=3) s+=$(n-2)*3600; if(n>=4) s+=$(n-3)*86400; printf "%.3f\n", s }'
}
# js1_totalcpu ID: sacct's TotalCPU of the job's steps, summed, in seconds.
js1_totalcpu() {
	sacct -n -P -j "$1" -o JobID,TotalCPU | awk -F'|' -v j="$1" '$1 "" != j {print $2}' | js1_secs |
		awk '{s+=$1} END{printf "%.3f\n", s}'
}
# js1_bytes "123K": sacct's sizes (binary units) in bytes.
js1_bytes() {
	awk '{v=$1; u=substr(v,length(v)); n=v+0; m=(u=="K")?2^10:(u=="M")?2^20:(u=="G")?2^30:(u=="T")?2^40:1; printf "%.0f\n", n*m}'
}

# js1_writer: one run of the packaged unit; its summary line in $JS1_LINE,
# its wall time in $JS1_WALL, the sacctmgr processes it started (counted
# by a wrapper that logs each start to the journal) in $JS1_PROCS.
js1_writer() {
	local t0 t1 inv=$1
	t0=$(date +%s.%N)
	systemctl start jobscope-summaries.service
	JS1_RC=$?
	t1=$(date +%s.%N)
	JS1_WALL=$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.2f", b-a}')
	# The runs are one after the other: the unit's last summary line is this run's.
	JS1_LINE=$(journalctl -b --no-pager -o cat -u jobscope-summaries.service | grep 'jobscope report summaries:' | tail -1)
	JS1_PROCS=$(journalctl -b --no-pager -o cat -t vmtest-sacctmgr | grep -c "^$inv ")
	log "summaries run $inv: rc $JS1_RC, ${JS1_WALL}s wall, sacctmgr started $JS1_PROCS times: $JS1_LINE"
}

js1_check() {
	local real c json tasks stepd burned ended got f maxrss ver
	ver=$(sacctmgr --version)
	if [[ $ver =~ ^slurm(-wlm)?\ (1[0-9]|2[0-2])\. ]]; then
		skip "summaries in AdminComment" "$ver lowercases AdminComment (test/e2e checks the refusal)"
		return
	fi
	need 240 "summary jobs ended (sacct)" js1_ended
	sacctmgr -i modify job where jobid="$J_KEEP" set AdminComment="$JS1_KEEP" >/dev/null ||
		row "summaries: an operator sets $J_KEEP's AdminComment" "sacctmgr ok" failed FAIL
	# The packaged way (the unit's own comments): an operator user, the
	# site file, the units.
	sacctmgr -i add user jobscope account=root adminlevel=operator >/dev/null ||
		row "summaries: sacctmgr add user jobscope adminlevel=operator" ok failed FAIL
	install -d -m 0755 /etc/jobscope
	printf 'prometheus:\n  url: http://127.0.0.1:%s\n' "$PROM_PORT" >/etc/jobscope/report.yml
	install -m 0644 "$SRC"/contrib/systemd/jobscope-summaries.{service,timer} "$UNIT_DIR/"
	systemctl daemon-reload
	# Every sacctmgr start, whoever starts it, logged: the writer's own
	# count is checked against it.
	real=$(command -v sacctmgr)
	mv "$real" "$real.vmtest"
	# systemd-cat reaches the journal from inside the unit's sandbox
	# (PrivateDevices has no /dev/log).
	cat >"$real" <<EOF
#!/bin/sh
echo "\$(cat /run/vmtest-js1-run 2>/dev/null) \$*" | systemd-cat -t vmtest-sacctmgr
exec $real.vmtest "\$@"
EOF
	chmod 755 "$real"

	echo 1 >/run/vmtest-js1-run
	js1_writer 1
	check_eq "summaries: writer exit status (jobscope-summaries.service)" 0 "$JS1_RC"
	check_ge "summaries: jobs written (its line)" 1 "$(sed -n 's/.*: written \([0-9]*\),.*/\1/p' <<<"$JS1_LINE")"
	check_eq "summaries: sacctmgr processes it counts + its --version == started" \
		"$(($(sed -n 's/.*sacctmgr processes \([0-9]*\).*/\1/p' <<<"$JS1_LINE") + 1))" "$JS1_PROCS"
	c=$(js1_comment "$J_JS1")
	check_eq "summaries: job $J_JS1's AdminComment starts JS1:" "JS1:" "${c:0:4}"
	json=$(printf '%s' "${c#JS1:}" | base64 -d 2>/dev/null | gunzip 2>/dev/null | jq -c . 2>/dev/null)
	printf '%s\n' "$json" >"$M/js1-$J_JS1.json"
	check_eq "summaries: it decodes (base64 -d | gunzip | jq): user" alice "$(jq -r '.jobscope.user // "none"' <<<"$json")"
	# The summary counts the job's cgroup as last scraped (the tasks and
	# slurmstepd, step_*/slurm). The job idles past two scrapes after its
	# burn, so that lies between its cgroup after the burn and at its very
	# end (within 2%). The last commands of the job, after the last scrape,
	# are in neither the summary nor the bracket's low end: under TCG and
	# load they cost 0.3 s (VM B: summary 24.856 s, cgroup 25.167 s at the
	# end, sacct 25.444 s), which failed a bracket starting at TotalCPU.
	# TotalCPU (user + system summed over the steps: the allocation line
	# (-X) holds 0 on 26.05) counts those last commands and not slurmstepd
	# (2-3% of this 20 s job under TCG): within 5% of it.
	tasks=$(js1_totalcpu "$J_JS1")
	stepd=$(sed -n 's/^stepd_usec=\([0-9]*\)$/\1/p' "/var/tmp/out/$J_JS1.out")
	check_ge "summaries: the job recorded slurmstepd's CPU (usec)" 1 "${stepd:-0}"
	burned=$(sed -n 's/^burned_usec=\([0-9]*\)$/\1/p' "/var/tmp/out/$J_JS1.out" | awk '{printf "%.6f", $1/1e6}')
	ended=$(sed -n 's/^job_usec=\([0-9]*\)$/\1/p' "/var/tmp/out/$J_JS1.out" | awk '{printf "%.6f", $1/1e6}')
	got=$(jq -r '[.nodes[].total_time] | add // "absent"' <<<"$json")
	check_within "summaries: CPU seconds (nodes' total_time) in [job cgroup after the burn, at its end]" "${burned:-absent}" "${ended:-absent}" "$got" 0.02
	check_close "summaries: CPU seconds ~ sacct TotalCPU (no slurmstepd, the last commands)" "$tasks" "$got" 0.05
	log "summaries: TotalCPU $tasks s, slurmstepd $stepd usec, job cgroup $burned s after the burn and $ended s at the end, summary $got s"
	check_eq "summaries: cores == sacct AllocCPUS" "$(sacct -n -X -P -j "$J_JS1" -o AllocCPUS)" \
		"$(jq -r '[.nodes[].cpus] | add // "absent"' <<<"$json")"
	# used_memory is the job cgroup's peak, MaxRSS the largest task's RSS
	# as jobacct_gather sampled it: both are the JS1_MIB MiB the task held
	# and touched, apart from the few MiB of slurmstepd and page cache the
	# cgroup also charges.
	maxrss=$(sacct -n -P -j "$J_JS1" -o MaxRSS | grep . | js1_bytes | sort -n | tail -1)
	check_close "summaries: used memory (cgroup peak) ~ sacct MaxRSS" "$maxrss" \
		"$(jq -r '[.nodes[].used_memory] | add // "absent"' <<<"$json")" 0.02
	log "summaries: job $J_JS1 steps' JobID,TotalCPU,UserCPU,SystemCPU,MaxRSS $(sacct -n -P -j "$J_JS1" -o JobID,TotalCPU,UserCPU,SystemCPU,MaxRSS | paste -sd' ' -), MaxRSS $maxrss B, summary ${#c} bytes: $json"
	check_eq "summaries: an operator's comment is left as it is" "$JS1_KEEP" "$(js1_comment "$J_KEEP")"

	echo 2 >/run/vmtest-js1-run
	js1_writer 2
	check_eq "summaries: second run writes nothing" "0/0" \
		"$JS1_RC/$(sed -n 's/.*: written \([0-9]*\),.*/\1/p' <<<"$JS1_LINE")"
	check_eq "summaries: second run started no sacctmgr but its --version" 1 "$JS1_PROCS"
	check_eq "summaries: the summary is unchanged (sha256)" "$(printf %s "$c" | sha256sum | cut -c1-16)" \
		"$(js1_comment "$J_JS1" | tr -d '\n' | sha256sum | cut -c1-16)"
	mv "$real.vmtest" "$real"

	# Prometheus forgets the job (admin API); the report reads the summary.
	curl -fsS -X POST -g "http://127.0.0.1:$PROM_PORT/api/v1/admin/tsdb/delete_series?match[]={jobid=\"$J_JS1\"}" ||
		row "summaries: delete job $J_JS1's series (admin API)" 204 failed FAIL
	check_eq "summaries: Prometheus no longer holds job $J_JS1" 0 \
		"$(promq "{jobid=\"$J_JS1\"}" | jq -r '.data.result | length')"
	f=$M/report-js1-$J_JS1.json
	if jobscope report --format=json "$J_JS1" >"$f" 2>"$f.err"; then
		check_eq "summaries: report of the forgotten job: start_source" accounting_summary "$(jq -r '.job.start_source' "$f")"
		check_within "summaries: report's CPU seconds in [job cgroup after the burn, at its end]" "${burned:-absent}" "${ended:-absent}" \
			"$(jq -r '.cpu.used_seconds' "$f")" 0.02
	else
		row "summaries: report from the summary" "a report" "$(head -c 200 "$f.err")" FAIL
	fi
}
