# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# Assertions and /metrics text helpers shared by the end-to-end tests
# (test/e2e/run.sh on the host, test/vm/guest/e2e.sh in each VM). Sourced;
# bash. Each check adds a row (assertion, expected, measured, PASS/FAIL/SKIP);
# print_table prints them all and FAILS counts the failures. Uses T0 (the
# test's start, epoch seconds) when the caller sets it.

ROWS=()
FAILS=0
row() { # name expected measured status
	ROWS+=("$1"$'\x1f'"${2:-(none)}"$'\x1f'"${3:-(none)}"$'\x1f'"$4")
	[ "$4" = FAIL ] && FAILS=$((FAILS + 1))
	return 0
}
num_ok() { [[ $1 =~ ^-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?$ ]]; }
check_eq() { # name expected measured
	if [ "$2" = "$3" ]; then row "$1" "$2" "$3" PASS; else row "$1" "$2" "$3" FAIL; fi
}
check_ge() { # name minimum measured
	if num_ok "$3" && awk -v m="$3" -v e="$2" 'BEGIN{exit !(m >= e)}'; then
		row "$1" ">= $2" "$3" PASS
	else
		row "$1" ">= $2" "$3" FAIL
	fi
}
check_close() { # name expected measured relative-tolerance [absolute-tolerance]
	local abs=${5:-0}
	if num_ok "$2" && num_ok "$3" && awk -v m="$3" -v e="$2" -v r="$4" -v a="$abs" \
		'BEGIN{d=m-e; if(d<0)d=-d; t=r*(e<0?-e:e); if(a>t)t=a; exit !(d <= t)}'; then
		row "$1" "$2 +-$(awk -v r="$4" 'BEGIN{printf "%g%%", r*100}')" "$3" PASS
	else
		row "$1" "$2 +-$(awk -v r="$4" 'BEGIN{printf "%g%%", r*100}')" "$3" FAIL
	fi
}
# check_close_plus NAME EXPECTED MEASURED RELATIVE ABSOLUTE: like
# check_close, but the two tolerances add (a relative accuracy plus a known
# absolute skew between the two readings).
check_close_plus() {
	local want
	want="$2 +-$(awk -v r="$4" -v a="$5" 'BEGIN{printf "%g%%+%gs", r*100, a}')"
	if num_ok "$2" && num_ok "$3" && num_ok "$5" && awk -v m="$3" -v e="$2" -v r="$4" -v a="$5" \
		'BEGIN{d=m-e; if(d<0)d=-d; t=r*(e<0?-e:e)+a; exit !(d <= t)}'; then
		row "$1" "$want" "$3" PASS
	else
		row "$1" "$want" "$3" FAIL
	fi
}
# check_within NAME LOW HIGH MEASURED [RELATIVE]: LOW*(1-r) <= MEASURED <= HIGH*(1+r).
check_within() {
	local r=${5:-0} lo hi
	lo=$(awk -v v="$2" -v r="$r" 'BEGIN{printf "%.6f", v*(1-r)}')
	hi=$(awk -v v="$3" -v r="$r" 'BEGIN{printf "%.6f", v*(1+r)}')
	if num_ok "$4" && num_ok "$2" && num_ok "$3" && awk -v m="$4" -v lo="$lo" -v hi="$hi" 'BEGIN{exit !(m >= lo && m <= hi)}'; then
		row "$1" "[$lo, $hi]" "$4" PASS
	else
		row "$1" "[$lo, $hi]" "$4" FAIL
	fi
}
skip() { row "$1" "-" "$2" SKIP; }

print_table() {
	local r n e m s wn=9 we=8 wm=8 line
	for r in "${ROWS[@]}"; do # column widths from the content, at most 70
		IFS=$'\x1f' read -r n e m s <<<"$r"
		((${#n} > wn)) && wn=${#n}
		((${#e} > we)) && we=${#e}
		((${#m} > wm)) && wm=${#m}
	done
	((wn > 70)) && wn=70
	((we > 40)) && we=40
	((wm > 40)) && wm=40
	line=$(printf '%*s' $((wn + we + wm + 10)) '' | tr ' ' -)
	printf '\n%-*s  %-*s  %-*s  %s\n%s\n' "$wn" ASSERTION "$we" EXPECTED "$wm" MEASURED RESULT "$line"
	for r in "${ROWS[@]}"; do
		IFS=$'\x1f' read -r n e m s <<<"$r"
		printf '%-*s  %-*s  %-*s  %s\n' "$wn" "$n" "$we" "$e" "$wm" "$m" "$s"
	done
	printf '%s\n' "$line"
	printf '%d assertions, %d failed, %d skipped; %ds in all\n' "${#ROWS[@]}" "$FAILS" \
		"$(printf '%s\n' "${ROWS[@]}" | grep -c 'SKIP$')" "$(($(date +%s) - ${T0:-$(date +%s)}))"
}

# wait_for SECONDS DESCRIPTION COMMAND...: poll COMMAND every 0.2 s until it
# succeeds or SECONDS have passed (by the clock: a slow command, as in a
# TCG VM, does not stretch the wait).
wait_for() {
	local end=$((SECONDS + $1))
	shift 2
	while :; do
		"$@" >/dev/null 2>&1 && return 0
		((SECONDS >= end)) && return 1
		sleep 0.2
	done
}
# need SECONDS DESCRIPTION COMMAND...: wait_for or die (the caller's).
need() { wait_for "$1" "$2" "${@:3}" || die "timed out after $1 s waiting for: $2"; }

# --- /metrics text ------------------------------------------------------------

# mval FILE NAME [MATCH...]: sum of the series NAME whose label set contains
# every MATCH (e.g. 'jobid="5"'); "absent" if none.
mval() {
	local f=$1 name=$2 lines m
	shift 2
	lines=$(grep -E "^${name}(\{| )" "$f" || true)
	for m in "$@"; do lines=$(printf '%s\n' "$lines" | grep -F -- "$m" || true); done
	printf '%s\n' "$lines" | awk 'NF{s+=$NF; n++} END{if(n) printf "%.15g\n", s; else print "absent"}'
}
# mnum: mval printed as %g (integers without decimals).
mnum() { mval "$@" | awk '$1=="absent"{print; next} {printf "%g\n", $1}'; }
# mcount FILE NAME [MATCH...]: number of matching series.
mcount() {
	local f=$1 name=$2 lines m
	shift 2
	lines=$(grep -E "^${name}(\{| )" "$f" || true)
	for m in "$@"; do lines=$(printf '%s\n' "$lines" | grep -F -- "$m" || true); done
	printf '%s\n' "$lines" | grep -c . || true
}
# mlabel FILE NAME MATCH LABEL: value of LABEL on the first matching series.
mlabel() {
	grep -E "^$2\{" "$1" | grep -F -- "$3" | head -1 |
		sed -n "s/.*[{,]$4=\"\\([^\"]*\\)\".*/\\1/p"
}
# mlabels FILE NAME MATCH LABEL: sorted, comma-joined values of LABEL.
mlabels() {
	grep -E "^$2\{" "$1" | grep -F -- "$3" | sed -n "s/.*[{,]$4=\"\\([^\"]*\\)\".*/\\1/p" |
		sort -u | paste -sd, -
}
# mby FILE NAME LABEL: "value=sum,..." of NAME summed by LABEL, sorted; groups
# summing to 0 are left out (Slurm's own listings have no empty groups).
mby() {
	grep -E "^$2\{" "$1" | sed -n "s/.*[{,]$3=\"\([^\"]*\)\".* \([^ ]*\)$/\1 \2/p" |
		awk '{s[$1]+=$2} END{for (k in s) if (s[k] != 0) printf "%s=%g\n", k, s[k]}' | sort | paste -sd, -
}

# --- Slurm's own counts, in mby's form ------------------------------------------

# squeue_states [SQUEUE-ARGS...]: jobs by state, lower case.
squeue_states() { squeue -h "$@" -o %T | tr 'A-Z' 'a-z' | sort | uniq -c | awk '{print $2"="$1}' | paste -sd, -; }
# sinfo_states: nodes by state, each node once, without sinfo's flag suffixes.
sinfo_states() {
	sinfo -h -N -o '%N %T' | sort -u | awk '{print $2}' | tr -d '*~#!%$@^' | sort | uniq -c |
		awk '{print $2"="$1}' | paste -sd, -
}
