# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# Job summaries in Slurm's accounting (docs/report.md): `jobscope report
# summaries` writes carol's finished jobs' JS1 summaries into their
# AdminComment through sacctmgr, and `jobscope report` still reports a job
# from its summary once Prometheus has deleted its series. Sourced by
# test/e2e/run.sh after report_e2e (carol's jobs R_BURN and R_SLEEP have
# ended); uses its helpers and report.sh's report_cli and jq_report.

JS1_KEEP="reviewed by ops: keep"

# js1_setup: an operator's comment on the sleeper, which the writer must
# leave as it is.
js1_setup() {
	sacctmgr -i modify job where jobid="$R_SLEEP" set AdminComment="$JS1_KEEP" >/dev/null 2>&1 ||
		row "summaries: set an operator's AdminComment on $R_SLEEP" "sacctmgr ok" "failed" FAIL
}

# js1_comment ID: the job's AdminComment, as the issue's pipeline reads it.
js1_comment() { sacct -j "$1" -n -X -o AdminComment%100000 | sed 's/^ *//;s/ *$//'; }

js1_e2e() {
	log "job summaries (JS1) in Slurm's accounting"
	local out=$WORK/report/js1 t0 t1 rc c json truth got f ver
	ver=$(sacctmgr --version 2>/dev/null)
	t0=$(date +%s.%N)
	"$WORK/bin/jobscope" report summaries --config="$WORK/etc/report.yml" --since=1h --batch=50 \
		>"$out.out" 2>"$out.err"
	rc=$?
	t1=$(date +%s.%N)
	log "summaries ($ver): exit $rc, $(tail -1 "$out.err" | cut -c1-300) (wall $(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.2f", b-a}')s)"
	if [[ $ver =~ ^slurm(-wlm)?\ (1[0-9]|2[0-2])\. ]]; then
		# 22.05's sacctmgr lowercases AdminComment (strip_quotes(..., 1) in
		# src/sacctmgr/job_functions.c) and slurmctld refuses to change a
		# finished job: the writer must refuse, writing nothing.
		check_eq "summaries: writer refuses a sacctmgr that lowercases AdminComment" "1/1" \
			"$rc/$(grep -c 'lower case' "$out.err")"
		check_eq "summaries: nothing written on refusal" "" "$(js1_comment "$R_BURN")"
		# The summary the writer would store (--dry-run), put in place in
		# slurmdbd's database directly: a stand-in for the write Slurm 22.05
		# cannot do, so that what follows reads a real job's summary back.
		t0=$(date +%s.%N)
		"$WORK/bin/jobscope" report summaries --config="$WORK/etc/report.yml" --since=1h --dry-run \
			>"$out.dry" 2>"$out.dry.err"
		t1=$(date +%s.%N)
		log "summaries --dry-run: $(tail -1 "$out.dry.err" | cut -c1-300) (wall $(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.2f", b-a}')s)"
		c=$(sed -n "s|^modify job where jobid=$R_BURN set AdminComment='\(JS1:[A-Za-z0-9+/=]*\)'\$|\1|p" "$out.dry")
		check_eq "summaries: --dry-run prints the burner's modify command" "JS1:" "${c:0:4}"
		[ -n "$c" ] && mariadb slurm_acct_db -e "UPDATE ${CLUSTER}_job_table SET admin_comment='$c' WHERE id_job=$R_BURN"
	else
		check_eq "summaries: writer exit status" 0 "$rc"
		[ "$rc" = 0 ] || sed -n 1,10p "$out.err" >&2
	fi
	c=$(js1_comment "$R_BURN")
	check_eq "summaries: burner's AdminComment starts JS1:" "JS1:" "${c:0:4}"
	json=$(printf '%s' "${c#JS1:}" | tr -d ' ' | base64 -d 2>/dev/null | gzip -d 2>/dev/null | jq -c . 2>/dev/null)
	printf '%s\n' "$json" >"$out.json"
	check_eq "summaries: it decodes (base64 | gunzip | jq) with its user" carol "$(jq -r '.jobscope.user // "none"' <<<"$json")"
	truth=$(sacct_cpu "$R_BURN")
	got=$(jq -r '[.nodes[].total_time] | add // "absent"' <<<"$json")
	check_close "summaries: CPU seconds ~ sacct TotalCPU" "$truth" "$got" 0.02
	check_eq "summaries: cores == sacct AllocCPUS" "$(sacct -j "$R_BURN" -n -X -o AllocCPUS | tr -d ' ')" \
		"$(jq -r '[.nodes[].cpus] | add // "absent"' <<<"$json")"
	# --mem=100M: what the job was given, in bytes, as sacct's AllocTRES says.
	truth=$(sacct -j "$R_BURN" -n -X -P -o AllocTRES | tr ',' '\n' | sed -n 's/^mem=//p' |
		awk '{v=$1; u=substr(v,length(v)); n=v+0; m=(u=="K")?2^10:(u=="M")?2^20:(u=="G")?2^30:(u=="T")?2^40:1; printf "%.0f", n*m}')
	check_close "summaries: memory given ~ sacct AllocTRES mem" "$truth" \
		"$(jq -r '[.nodes[].total_memory] | add // "absent"' <<<"$json")" 0.02
	log "summaries: peak memory $(jq -r '[.nodes[].used_memory] | add' <<<"$json") B (cgroup peak, page cache included); sacct MaxRSS $(sacct -j "$R_BURN" -n -o MaxRSS | tr -d ' ' | sort -h | tail -1); comment ${#c} bytes"
	check_eq "summaries: an operator's comment is left as it is" "$JS1_KEEP" "$(js1_comment "$R_SLEEP")"
	# Prometheus forgets the job (admin API), the report reads the summary.
	curl -fsS -X POST -g "http://127.0.0.1:$PORT_PROM/api/v1/admin/tsdb/delete_series?match[]={jobid=\"$R_BURN\"}" ||
		row "summaries: delete the burner's series" "204" "failed" FAIL
	check_eq "summaries: Prometheus no longer holds the burner" 0 \
		"$(promq "slurm_job_info{jobid=\"$R_BURN\"}" | jq -r '.data.result | length')"
	f=$REPORT_OUT/burn-summary.json
	if report_cli --format=json "$R_BURN" >"$f" 2>"$out.report.err"; then
		check_eq "summaries: report of the forgotten job is from its summary" accounting_summary \
			"$(jq_report "$f" '.job.start_source')"
		check_close "summaries: its CPU seconds ~ sacct TotalCPU" "$(sacct_cpu "$R_BURN")" \
			"$(jq_report "$f" '.cpu.used_seconds')" 0.02
		check_eq "summaries: the text report says so" 1 \
			"$(report_cli "$R_BURN" 2>/dev/null | tr -s ' \n' ' ' | grep -c "from the job's accounting summary")"
	else
		row "summaries: report from the summary" "a report" "$(head -c 200 "$out.report.err")" FAIL
	fi
}
