# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# Sourced by ctl.sh: what jobscope's controller unit asks of a real
# slurmctld, counted by slurmctld itself (sdiag), over a few poll intervals
# of a quiet cluster. The short CI form of test/vm/guest/rpcload.sh (a
# measurement, run by hand): a change that adds RPCs, or runs a command
# more often than its interval, fails here against real Slurm, as
# TestControllerRPCBudget (collector/cluster) fails against fake commands.
#
# rpcbudget_check PID PORT: PID is the controller's process, PORT its
# listen port. Needs root (sdiag --reset), assert.sh's row/check_* and a
# log function. Polls are started by scrapes (internal/poll), so a scraper
# here asks /metrics every second during the window: each poll then starts
# at most one scrape gap after it is due. RPCB_POLLS (2) sets the window's
# length in poll intervals. Nothing else may run Slurm commands as the
# controller's user during the window (sdiag counts RPCs by uid).

# What each command jobscope runs costs slurmctld, per run: the "slurmctld
# RPCs" column of docs/controller.md's table (measured per message type in
# VM C) and rpcBudget's rpcPerRun (collector/cluster/rpcbudget_test.go,
# which reads this table back). Lines: command, source (as in
# jobscope_slurm_snapshot_age_seconds), interval (fast: --slurm.poll-interval,
# slow: --slurm.slow-poll-interval), message types ("-": none, sacct asks
# slurmdbd).
RPCB_TABLE='squeue jobs fast REQUEST_JOB_INFO
sinfo nodes fast REQUEST_NODE_INFO,REQUEST_PARTITION_INFO
sdiag diag fast REQUEST_STATS_INFO
sacct sacct fast -
sshare shares slow REQUEST_SHARE_INFO
scontrol reservations slow REQUEST_RESERVATION_INFO
scontrol licenses slow REQUEST_LICENSE_INFO'

# The same with --slurm.source=slurmrestd: jobs and nodes come from
# slurmrestd, which runs as the unit's user (so sdiag counts its RPCs under
# that user) and asks slurmctld REQUEST_JOB_INFO for /jobs and
# REQUEST_NODE_INFO and REQUEST_PARTITION_INFO for /nodes (the partitions
# of each node), as sinfo does; the other sources stay commands.
# slurmrestd:ping runs once, when the source is probed at start.
# shellcheck disable=SC2034 # read by ctl.sh
RPCB_TABLE_RESTD='slurmrestd:jobs jobs fast REQUEST_JOB_INFO
slurmrestd:nodes nodes fast REQUEST_NODE_INFO,REQUEST_PARTITION_INFO
sdiag diag fast REQUEST_STATS_INFO
sacct sacct fast -
sshare shares slow REQUEST_SHARE_INFO
scontrol reservations slow REQUEST_RESERVATION_INFO
scontrol licenses slow REQUEST_LICENSE_INFO'

# rpcb_now: epoch seconds with fractions.
rpcb_now() { date +%s.%N; }

# rpcb_seconds DURATION: a Go duration (30s, 5m, 1m30s, 1.5h, 500ms) in
# seconds; empty if it is not one.
rpcb_seconds() {
	awk -v d="$1" 'BEGIN {
		s = 0; if (d == "0") { print 0; exit }
		while (d != "") {
			if (!match(d, /^[0-9.]+/)) { exit }
			v = substr(d, 1, RLENGTH); d = substr(d, RLENGTH + 1)
			if (!match(d, /^(ns|us|ms|s|m|h)/)) { exit }
			u = substr(d, 1, RLENGTH); d = substr(d, RLENGTH + 1)
			s += v * (u == "h" ? 3600 : u == "m" ? 60 : u == "s" ? 1 : u == "ms" ? 1e-3 : u == "us" ? 1e-6 : 1e-9)
		}
		print s }'
}

# rpcb_flag PID NAME DEFAULT: --NAME's value on PID's command line, as
# jobscope reads it (--NAME=V or --NAME V, the last one wins): the unit's
# ExecStart with /etc/default/jobscope's CONTROLLER_ARGS expanded.
rpcb_flag() {
	tr '\0' '\n' <"/proc/$1/cmdline" | awk -v f="--$2" -v def="$3" '
		take { v = $0; set = 1; take = 0; next }
		$0 == f { take = 1; next }
		index($0, f "=") == 1 { v = substr($0, length(f) + 2); set = 1 }
		END { print (set ? v : def) }'
}

# rpcb_sdiag FILE SECTION: "name id count" for each line of sdiag's table
# "Remote Procedure Call statistics SECTION" ("by message type", "by
# user"). The lines are "NAME ( ID) count:N ave_time:N total_time:N" in
# 22.05 and 26.05 alike (their column widths differ, and 26.05 adds other
# sections, "RPC queue enabled", "Main scheduler exit", "Backfill exit"):
# fields are found by their names, not their columns.
rpcb_sdiag() {
	awk -v sec="Remote Procedure Call statistics $2" '
		/^[^ \t]/ { on = index($0, sec) == 1; next }
		on && match($0, /count:[0-9]+/) {
			c = substr($0, RSTART + 6, RLENGTH - 6)
			id = "?"
			if (match($0, /\( *[0-9]+\)/)) { id = substr($0, RSTART + 1, RLENGTH - 2); gsub(/ /, "", id) }
			print $1, id, c
		}' "$1"
}

# rpcb_scrape PORT FILE: the controller's own view, one line each:
# "runs CMD N", "dur CMD SECONDS" (latest run), "age SOURCE SECONDS",
# "up SOURCE 0|1". Fails when /metrics does not answer.
rpcb_scrape() {
	local t
	t=$(curl -fsS --max-time 20 "http://127.0.0.1:$1/metrics") || return 1
	awk '
		function lbl(k,   s) { s = $0; if (!sub(".*[{,]" k "=\"", "", s)) return ""; sub(/".*/, "", s); return s }
		/^jobscope_slurm_command_runs_total\{/ { print "runs", lbl("command"), $NF }
		/^jobscope_slurm_command_last_duration_seconds\{/ { print "dur", lbl("command"), $NF }
		/^jobscope_slurm_snapshot_age_seconds\{/ { print "age", lbl("source"), $NF }
		/^jobscope_slurm_up\{/ { print "up", lbl("source"), $NF }' <<<"$t" | sort -u >"$2"
}

# rpcb_cpu_us PID: slurmctld's CPU time in microseconds and where it comes
# from: its cgroup's cpu.stat (v2) or cpuacct.usage (v1) where that cgroup
# holds slurmctld alone (the site's slurmctld.service), else the process's
# own utime and stime (a slurmctld started by hand shares its cgroup).
rpcb_cpu_us() {
	local pid=$1 cg f
	cg=$(awk -F: '$1 == "0" {print $3}' "/proc/$pid/cgroup" 2>/dev/null)
	f=/sys/fs/cgroup$cg
	if [ -n "$cg" ] && [ -f "$f/cpu.stat" ] && [ "$(sort -u "$f/cgroup.procs" 2>/dev/null | paste -sd' ' -)" = "$pid" ]; then
		echo "$(awk '$1 == "usage_usec" {print $2}' "$f/cpu.stat") cgroup:$cg/cpu.stat"
		return
	fi
	cg=$(awk -F: '$2 ~ /(^|,)cpuacct(,|$)/ {print $3}' "/proc/$pid/cgroup" 2>/dev/null)
	f=/sys/fs/cgroup/cpuacct$cg
	if [ -n "$cg" ] && [ -f "$f/cpuacct.usage" ] && [ "$(sort -u "$f/cgroup.procs" 2>/dev/null | paste -sd' ' -)" = "$pid" ]; then
		echo "$(($(cat "$f/cpuacct.usage") / 1000)) cgroup:$cg/cpuacct.usage"
		return
	fi
	awk -v hz="$(getconf CLK_TCK)" '{sub(/.*\) /, ""); printf "%d process\n", ($12 + $13) * 1e6 / hz}' "/proc/$pid/stat"
}

# rpcb_expect: per source, the polls the window certainly holds (lo) and
# may hold (hi), from the intervals alone: "SOURCE lo hi". Reads the
# variables rpcbudget_check sets. At the scrape before the window (from T0
# to T0E) a source's snapshot was AGE old: its last poll started at L, in
# [T0 - AGE - D, T0E - AGE] (D: its command's duration and half a second
# of parsing), and its RPC was answered before T0E - AGE, so before the
# reset. Its k-th poll after that is due at L + k*I (I: the poll interval,
# or the slow one; a failing source retries at the poll interval) and
# starts at the first scrape after that, so in [L_lo + k*I,
# L_hi + k*(I + G)] (G: the longest gap between two scrapes in the window),
# and its RPC reaches slurmctld within D of its start. A poll is certain
# when that whole span lies between the end of the reset (TR) and the
# start of the read (TES), and possible when it overlaps the time from the
# reset's start (T0E) to the read's end (TE). So only a poll boundary at
# either end of the window makes lo and hi differ, and rpcb_end puts the
# read where no poll is due.
rpcb_expect() {
	awk -v tr0="$RPCB_T0E" -v tr="$RPCB_TR" -v tes="$RPCB_TES" -v te="$RPCB_TE" -v t0="$RPCB_T0" -v t0e="$RPCB_T0E" \
		-v P="$RPCB_P" -v PS="$RPCB_PS" -v G="$RPCB_G" -v tab="$RPCB_TABLE" '
		FILENAME == ARGV[1] { v[$1, $2] = $3; next }
		FILENAME == ARGV[2] { d[$1, $2] = $3; next }
		END {
			n = split(tab, lines, "\n")
			for (i = 1; i <= n; i++) {
				split(lines[i], f, " "); cmd = f[1]; src = f[2]
				I = (f[3] == "slow" && v["up", src] == 1 ? PS : P)
				if (!(("age", src) in v)) { print src, 0, 0, "never-ran"; continue }
				D = d["dur", cmd] + 0.5
				llo = t0 - v["age", src] - D; lhi = t0e - v["age", src]
				lo = 0; hi = 0
				for (k = 1; llo + k * I < te; k++) {
					s_lo = llo + k * I; s_hi = lhi + k * (I + G) + D
					if (s_lo > tr && s_hi < tes) lo++
					if (s_hi > tr0 && s_lo < te) hi++
				}
				print src, lo, hi
			}
		}' "$RPCB_DIR/pre" "$RPCB_DIR/post"
}

# rpcb_range NAME LO HI MEASURED: a row, PASS when LO <= MEASURED <= HI.
rpcb_range() {
	local want=$2
	[ "$2" = "$3" ] || want="$2..$3"
	if [[ $4 =~ ^[0-9]+$ ]] && (($4 >= $2 && $4 <= $3)); then row "$1" "$want" "$4" PASS; else row "$1" "$want" "$4" FAIL; fi
}

# rpcb_end: when to read sdiag: between RPCB_POLLS and RPCB_POLLS+1 poll
# intervals after the reset, as far as possible from every source's next
# due times (ages at the scrape before the window), so that no poll starts
# near the read.
rpcb_end() {
	awk -v tr="$RPCB_TR" -v t0="$RPCB_T0" -v P="$RPCB_P" -v PS="$RPCB_PS" -v n="$RPCB_POLLS" -v tab="$RPCB_TABLE" '
		{ if ($1 == "age") age[$2] = $3 }
		END {
			m = split(tab, lines, "\n")
			best = tr + (n + 0.5) * P; bestd = -1
			for (c = tr + n * P + 2; c < tr + (n + 1) * P - 2; c += 0.5) {
				dmin = 1e9
				for (i = 1; i <= m; i++) {
					split(lines[i], f, " "); if (!(f[2] in age)) continue
					I = (f[3] == "slow" ? PS : P); L = t0 - age[f[2]]
					k = int((c - L) / I); for (j = k; j <= k + 1; j++) { x = c - (L + j * I); if (x < 0) x = -x; if (x < dmin) dmin = x }
				}
				if (dmin > bestd) { bestd = dmin; best = c }
			}
			printf "%.3f\n", best
		}' "$RPCB_DIR/pre"
}

rpcbudget_check() { # PID PORT [TABLE LABEL]
	local pid=$1 port=$2 uid user ctld driver t cpu0 cpu1 src srcs types tp lo hi want got other u
	# The functions above read these two: the table of the source the unit
	# runs with, and the rows' prefix.
	local RPCB_TABLE=${3:-$RPCB_TABLE} RPCB_LABEL=${4:-rpc budget}
	RPCB_POLLS=${RPCB_POLLS:-2}
	RPCB_DIR=$(mktemp -d /tmp/rpcbudget.XXXXXX)
	if [ -z "$pid" ] || [ ! -r "/proc/$pid/cmdline" ]; then
		row "$RPCB_LABEL: the controller's process" running "no process '$pid'" FAIL
		return
	fi
	RPCB_P=$(rpcb_seconds "$(rpcb_flag "$pid" slurm.poll-interval 30s)")
	RPCB_PS=$(rpcb_seconds "$(rpcb_flag "$pid" slurm.slow-poll-interval 5m)")
	if [ -z "$RPCB_P" ] || [ -z "$RPCB_PS" ]; then
		row "$RPCB_LABEL: the controller's intervals" "Go durations" "$(rpcb_flag "$pid" slurm.poll-interval 30s) $(rpcb_flag "$pid" slurm.slow-poll-interval 5m)" FAIL
		return
	fi
	# The slow interval is never shorter than the poll interval (cache.go).
	RPCB_PS=$(awk -v a="$RPCB_PS" -v b="$RPCB_P" 'BEGIN {print (a < b ? b : a)}')
	uid=$(awk '/^Uid:/ {print $2}' "/proc/$pid/status")
	user=$(id -nu "$uid" 2>/dev/null || echo "$uid")
	ctld=$(scontrol show config 2>/dev/null | awk -F'= ' '/^SlurmctldPidFile/ {print $2}')
	ctld=$(cat "${RPCB_CTLD_PIDFILE:-$ctld}" 2>/dev/null)

	RPCB_T0=$(rpcb_now)
	rpcb_scrape "$port" "$RPCB_DIR/pre" || {
		row "$RPCB_LABEL: /metrics of the controller on :$port" answers "no answer" FAIL
		return
	}
	RPCB_T0E=$(rpcb_now)
	sdiag --reset >/dev/null || {
		row "$RPCB_LABEL: sdiag --reset" "exit 0" "failed" FAIL
		return
	}
	RPCB_TR=$(rpcb_now)
	cpu0=$(rpcb_cpu_us "$ctld")
	# The driver: a scrape every second, each start time logged (the gaps
	# bound how late a due poll starts).
	(while :; do rpcb_now; rpcb_scrape "$port" "$RPCB_DIR/drv" || echo "down"; sleep 1; done >"$RPCB_DIR/scrapes") &
	driver=$!
	t=$(rpcb_end)
	log "$RPCB_LABEL: window from $(date -d "@$RPCB_TR" +%T) for $(awk -v a="$t" -v b="$RPCB_TR" 'BEGIN {printf "%.1f", a - b}') s; poll interval ${RPCB_P}s, slow ${RPCB_PS}s, user $user ($uid)"
	sleep "$(awk -v a="$t" -v b="$(rpcb_now)" 'BEGIN {d = a - b; printf "%.3f", (d > 0 ? d : 0)}')"
	RPCB_TES=$(rpcb_now)
	sdiag >"$RPCB_DIR/sdiag.txt" 2>&1
	RPCB_TE=$(rpcb_now)
	cpu1=$(rpcb_cpu_us "$ctld")
	kill "$driver" 2>/dev/null
	wait "$driver" 2>/dev/null
	rpcb_scrape "$port" "$RPCB_DIR/post" || row "$RPCB_LABEL: /metrics after the window" answers "no answer" FAIL
	# G: the longest time between two scrape starts (or from the reset to
	# the first, or from the last to the read).
	RPCB_G=$( (echo "$RPCB_TR"; grep -v down "$RPCB_DIR/scrapes"; echo "$RPCB_TES") | awk 'NR > 1 && $1 - p > g {g = $1 - p} {p = $1} END {printf "%.3f\n", g}')
	[ "$(grep -c down "$RPCB_DIR/scrapes")" = 0 ] || row "$RPCB_LABEL: every scrape of the window answered" 0 "$(grep -c down "$RPCB_DIR/scrapes") failed" FAIL
	rpcb_expect >"$RPCB_DIR/expect"
	rpcb_sdiag "$RPCB_DIR/sdiag.txt" "by message type" >"$RPCB_DIR/types"
	rpcb_sdiag "$RPCB_DIR/sdiag.txt" "by user" >"$RPCB_DIR/users"
	cp "$RPCB_DIR/sdiag.txt" "$OUT/rpcbudget-sdiag.txt" 2>/dev/null

	row "$RPCB_LABEL: window (sdiag --reset to sdiag), longest scrape gap; poll intervals" - \
		"$(awk -v a="$RPCB_TES" -v b="$RPCB_TR" -v g="$RPCB_G" 'BEGIN {printf "%.1f s, %.1f s", a - b, g}'); ${RPCB_P}s, ${RPCB_PS}s" INFO
	check_eq "$RPCB_LABEL: sdiag parsed (its message-type and user tables)" yes \
		"$([ -s "$RPCB_DIR/types" ] && [ -s "$RPCB_DIR/users" ] && echo yes || echo "no ($(head -c 200 "$RPCB_DIR/sdiag.txt"))")"
	while read -r src; do
		grep -q "^$src .* never-ran$" "$RPCB_DIR/expect" &&
			row "$RPCB_LABEL: source $src served before the window" "an age" "never ran" FAIL
	done < <(awk '$4 != "-" {print $2}' <<<"$RPCB_TABLE" | sort -u)
	# Not vacuous: every fast source polled within the window.
	check_ge "$RPCB_LABEL: fewest certain polls of a fast source in the window" 1 \
		"$(awk -v tab="$RPCB_TABLE" 'BEGIN {n = split(tab, l, "\n"); for (i = 1; i <= n; i++) {split(l[i], f, " "); if (f[3] == "fast") fast[f[2]] = 1}}
			($1 in fast) && (m == "" || $2 < m) {m = $2} END {print m + 0}' "$RPCB_DIR/expect")"
	other=$(awk -v u="$uid" '$2 != u {s += $3} END {print s + 0}' "$RPCB_DIR/users")
	u=$(awk -v u="$uid" '$2 == u {s += $3} END {print s + 0}' "$RPCB_DIR/users")
	# By message type: the polls of the sources that send it, plus at most
	# what the other users sent in the window (sdiag does not split its
	# types by user; the reset itself is root's REQUEST_STATS_INFO).
	types=$(awk '{n = split($4, t, ","); for (i = 1; i <= n; i++) if (t[i] != "-") print t[i]}' <<<"$RPCB_TABLE" | sort -u)
	for tp in $types; do
		srcs=$(awk -v t="$tp" 'index("," $4 ",", "," t ",") {print $2}' <<<"$RPCB_TABLE" | paste -sd' ' -)
		read -r lo hi < <(for src in $srcs; do awk -v s="$src" '$1 == s {print $2, $3}' "$RPCB_DIR/expect"; done |
			awk '{l += $1; h += $2} END {print l + 0, h + 0}')
		got=$(awk -v t="$tp" '$1 == t {s += $3} END {print s + 0}' "$RPCB_DIR/types")
		rpcb_range "$RPCB_LABEL: sdiag $tp (${srcs// /, } polls ${lo}..${hi}, 1 each; other users' RPCs $other)" "$lo" "$((hi + other))" "$got"
	done
	read -r lo hi < <(awk -v tab="$RPCB_TABLE" 'BEGIN {n = split(tab, l, "\n"); for (i = 1; i <= n; i++) {split(l[i], f, " "); r[f[2]] = (f[4] == "-" ? 0 : split(f[4], x, ","))}}
		{lo += $2 * r[$1]; hi += $3 * r[$1]} END {print lo + 0, hi + 0}' "$RPCB_DIR/expect")
	rpcb_range "$RPCB_LABEL: sdiag RPCs of $user (uid $uid): the polls times the documented RPCs" "$lo" "$hi" "$u"
	# jobscope's own count of what it ran, times each command's RPCs, is
	# what slurmctld counted for its user.
	want=$(join -a2 -e0 -o 0,1.2,2.2 <(awk '$1 == "runs" {print $2, $3}' "$RPCB_DIR/pre" | sort -k1,1) \
		<(awk '$1 == "runs" {print $2, $3}' "$RPCB_DIR/post" | sort -k1,1) |
		awk -v tab="$RPCB_TABLE" 'BEGIN {n = split(tab, l, "\n"); for (i = 1; i <= n; i++) {split(l[i], f, " "); if (!(f[1] in r)) r[f[1]] = (f[4] == "-" ? 0 : split(f[4], x, ","))}}
			{d = $3 - $2; s += d * r[$1]; runs = runs sprintf("%s%s=%d", runs == "" ? "" : " ", $1, d)} END {print s + 0 "|" runs}')
	check_eq "$RPCB_LABEL: jobscope_slurm_command_runs_total deltas ($(cut -d'|' -f2 <<<"$want")) x RPCs a run == sdiag's for $user" "${want%%|*}" "$u"
	cpu1=$(awk -v a="${cpu0%% *}" -v b="${cpu1%% *}" -v w="$(awk -v a="$RPCB_TE" -v b="$RPCB_TR" 'BEGIN {print a - b}')" \
		'BEGIN {printf "%.3f s in %.1f s", (b - a) / 1e6, w}')
	row "$RPCB_LABEL: slurmctld CPU time over the window (${cpu0#* })" - "$cpu1" INFO
	log "$RPCB_LABEL: expected polls (source lo hi): $(paste -sd, "$RPCB_DIR/expect"); by user: $(awk '{print $1 "=" $3}' "$RPCB_DIR/users" | paste -sd' ' -)"
	rm -rf "$RPCB_DIR"
}
