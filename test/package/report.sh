# SPDX-License-Identifier: Apache-2.0
# Sourced by test/package/run.sh (root, private mount namespace): the
# job-end report from the installed .deb, for real, and Debian 12's promtool
# on the packaged Prometheus files as installed.
#
# The smallest real path to a report: `jobscope report` reads Prometheus
# only (sacct when it is on PATH, and it is not here), so no Slurm is
# needed, but a real Prometheus is. A fresh Debian 12 tree gets Debian's
# prometheus and the jobscope .deb; the epilog is enabled with the package
# commands of docs/report.md, run as written. In a network namespace of
# its own (ports 9090 and 10817 are the tree's, not the host's), the
# packaged jobscope serves the demo node (testdata/demo: job 200 of carol)
# and Prometheus scrapes it with the packaged prometheus.yml as installed
# (its node list in /etc/prometheus/jobscope-nodes.yml, as a site writes
# it). Once Prometheus holds two samples of job 200, the exporter stops (the
# job ended) and every script in /etc/slurm/epilog.d runs with the
# environment slurmd gives an epilog. The report must then be in the job's
# working directory, written by carol.

RT=$WORK/report
PROMTAR=$WORK/$SUITE-prometheus.tar # the tarball's tree with prometheus installed
inrt() {
	chroot "$RT" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LC_ALL=C \
		DEBIAN_FRONTEND=noninteractive "$@" </dev/null
}

rm -rf --one-file-system "$RT"
mkdir -p "$RT"
if [ ! -s "$PROMTAR" ]; then
	log "installing Debian's prometheus in a $SUITE tree (cached in $PROMTAR)"
	tar -C "$RT" -xf "$TARBALL"
	cp /etc/resolv.conf "$RT/etc/resolv.conf"
	if ! inrt sh -c 'apt-get update -qq && apt-get install -y -qq --no-install-recommends prometheus' >"$WORK/prometheus-apt.log" 2>&1; then
		fail "report: apt-get install prometheus in the $SUITE tree" "$(tail -20 "$WORK/prometheus-apt.log")"
		return
	fi
	inrt apt-get clean
	tar -C "$RT" -cf "$PROMTAR.tmp" . && mv "$PROMTAR.tmp" "$PROMTAR"
else
	tar -C "$RT" -xf "$PROMTAR"
fi
mount -t proc proc "$RT/proc"
log "report tree ready: $RT ($(inrt prometheus --version 2>&1 | head -1))"

mkdir -p "$RT/tmp/pkg"
cp "$(deb_file jobscope "$HOST_ARCH")" "$RT/tmp/pkg/"
check "report: apt-get install ./jobscope_*.deb" inrt apt-get install -y --no-install-recommends \
	"/tmp/pkg/$(basename "$(deb_file jobscope "$HOST_ARCH")")"

# promtool of Debian 12 on the files as installed: the config's rule_files
# resolve next to it, so a rules file the package lacks fails here.
prom=/usr/share/jobscope/prometheus
check "report: promtool check config $prom/prometheus.yml" inrt promtool check config "$prom/prometheus.yml"
mapfile -t rules < <(inrt dpkg -L jobscope | grep -- '-rules\.yml$' | sort)
check_eq "report: every rules file of contrib/prometheus is installed" \
	"$(cd contrib/prometheus && ls -- *rules*.yml | sort | paste -sd' ')" \
	"$(for r in "${rules[@]}"; do basename "$r"; done | paste -sd' ')"
check "report: promtool check rules on every installed rules file" inrt promtool check rules "${rules[@]}"

# The site's side: the job's user, its working directory, the epilog
# enabled exactly as docs/report.md says for the packages.
inrt useradd --create-home --shell /bin/sh carol
inrt runuser -u carol -- mkdir /home/carol/job-200
enable=$(awk '/^## Reports at job end/ { s = 1 } s && /^```sh$/ { b = 1; next } b && /^```$/ { exit } b' docs/report.md)
check "report: docs/report.md's package commands enable the epilog" inrt sh -ec "$enable"
check_eq "report: the enabled epilog is the packaged one" /usr/share/jobscope/slurm/epilog.d/jobscope-report.sh \
	"$(inrt readlink -f /etc/slurm/epilog.d/jobscope-report.sh)"
# Diagnostics only: the tree has no syslog to take the epilog's notes.
echo "LOG=/var/tmp/report-epilog.log" >>"$RT/etc/jobscope/report-epilog.conf"
grep -qw localhost "$RT/etc/hosts" 2>/dev/null || echo "127.0.0.1 localhost" >>"$RT/etc/hosts"
mkdir -p "$RT/etc/prometheus"
printf -- "- targets: ['127.0.0.1:10817']\n  labels: {cluster: hpc1}\n" >"$RT/etc/prometheus/jobscope-nodes.yml"
cp -r testdata/demo "$RT/var/tmp/demo"

# A network namespace held open by a sleep; everything that listens runs in it.
unshare --net sleep 600 &
NSPID=$!
for _ in $(seq 50); do
	[ "$(readlink /proc/$NSPID/ns/net)" != "$(readlink /proc/self/ns/net)" ] && break
	sleep 0.1
done
innet() { nsenter --net=/proc/$NSPID/ns/net "$@"; }
innet_rt() { nsenter --net=/proc/$NSPID/ns/net chroot "$RT" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LC_ALL=C "$@" </dev/null; }
# innet_rt_bg, for a server started with &: exec makes the background job's
# pid the server's own (nsenter, chroot and env each exec the next), so
# `kill $!` stops the server, not a subshell that leaves it running.
innet_rt_bg() { exec nsenter --net=/proc/$NSPID/ns/net chroot "$RT" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LC_ALL=C "$@" </dev/null; }
innet ip link set lo up
innet_rt_bg /usr/bin/jobscope --web.listen-address=127.0.0.1:10817 --path.cgroupfs=/var/tmp/demo/cgroup \
	--path.procfs=/var/tmp/demo/proc --path.sysfs=/var/tmp/demo/sys --slurm.job-props-dir=/var/tmp/demo/props \
	--slurm.node-metadata.squeue=false --collector.ebpf=false --collector.gpu=false --collector.power=false \
	--log.level=error >"$WORK/report-jobscope.log" 2>&1 &
JPID=$!
innet_rt_bg prometheus --config.file=$prom/prometheus.yml --storage.tsdb.path=/var/tmp/prometheus \
	--web.listen-address=127.0.0.1:9090 >"$WORK/report-prometheus.log" 2>&1 &
PPID_=$!
query() { innet curl -sf http://127.0.0.1:9090/api/v1/query --data-urlencode "query=$1" 2>/dev/null |
	sed -n 's/.*"value":\[[^,]*,"\([^"]*\)"\].*/\1/p'; }
log "waiting for Prometheus to scrape job 200 twice (scrape_interval 30s)"
samples=
for _ in $(seq 150); do
	samples=$(query 'count_over_time(slurm_job_info{jobid="200"}[10m])')
	[ "${samples:-0}" -ge 2 ] 2>/dev/null && break
	kill -0 $PPID_ 2>/dev/null || break
	sleep 1
done
check "report: Prometheus scraped job 200 twice with the packaged config (got ${samples:-none})" test "${samples:-0}" -ge 2
check_eq "report: Prometheus loaded every installed rules file" "$(printf '%s\n' "${rules[@]}" | paste -sd' ')" \
	"$(innet curl -sf http://127.0.0.1:9090/api/v1/rules | grep -o '"file":"[^"]*"' | cut -d'"' -f4 | sort -u | paste -sd' ')"

# Issue 25 item 3, on the installed binary and rules: a path given that does
# not exist stops the start with one line and exit 2; a root that exists but
# holds no cgroup hierarchy sets the cgroup collector's success to 0 with its
# cause; and the installed JobscopeJobsNotDiscovered fires for such a node
# (the repository's promtool case run against the installed rules file).
missing_out=$(inrt /usr/bin/jobscope --path.cgroupfs=/nonexistent/cgroup 2>&1)
missing_rc=$?
check_eq "report: a missing --path.cgroupfs exits 2" 2 "$missing_rc"
check_eq "report: ... with one line naming the flag" "1 yes" \
	"$(printf '%s\n' "$missing_out" | wc -l) $(printf '%s' "$missing_out" | grep -q -- '--path.cgroupfs' && echo yes)"
mkdir -p "$RT/var/tmp/empty-cgroup"
innet_rt_bg /usr/bin/jobscope --web.listen-address=127.0.0.1:10818 --path.cgroupfs=/var/tmp/empty-cgroup \
	--path.procfs=/var/tmp/demo/proc --path.sysfs=/var/tmp/demo/sys --slurm.node-metadata.squeue=false \
	--collector.ebpf=false --collector.gpu=false --collector.power=false \
	--log.level=error >"$WORK/report-jobscope-empty.log" 2>&1 &
EPID=$!
empty=
for _ in $(seq 50); do
	empty=$(innet curl -sf http://127.0.0.1:10818/metrics 2>/dev/null) && break
	sleep 0.2
done
kill $EPID
wait $EPID 2>/dev/null
check_eq "report: an empty cgroup root: cgroup collector success 0" 1 \
	"$(printf '%s\n' "$empty" | grep -c '^jobscope_scrape_collector_success{collector="cgroup"} 0$')"
check_eq "report: ... cause no_cgroup_hierarchy counted" 1 \
	"$(printf '%s\n' "$empty" | grep -c '^jobscope_collector_errors_total{cause="no_cgroup_hierarchy",collector="cgroup"} [1-9]')"
mkdir -p "$RT$prom/tests"
cp contrib/prometheus/tests/discovery-alerts.yml "$RT$prom/tests/"
check "report: the installed JobscopeJobsNotDiscovered fires for a node without a cgroup hierarchy (promtool test rules)" \
	inrt promtool test rules "$prom/tests/discovery-alerts.yml"
rm -rf "$RT$prom/tests"

kill $JPID
wait $JPID 2>/dev/null

# The job ended: slurmd runs each epilog with the job's environment.
uid=$(inrt id -u carol)
epilog_rc=
for s in "$RT"/etc/slurm/epilog.d/*; do
	innet_rt SLURM_JOB_ID=200 SLURM_JOB_USER=carol SLURM_JOB_UID="$uid" SLURM_JOB_GID="$uid" \
		SLURM_JOB_ACCOUNT=biology SLURM_JOB_PARTITION=gpu SLURM_CLUSTER_NAME=hpc1 SLURM_JOB_NODELIST=node001 \
		SLURMD_NODENAME=node001 SLURM_JOB_WORK_DIR=/home/carol/job-200 SLURM_JOB_EXIT_CODE=0 \
		SLURM_SCRIPT_CONTEXT=epilog_slurmd "/etc/slurm/epilog.d/${s##*/}"
	epilog_rc="$epilog_rc$?"
done
check_eq "report: the epilog exits 0" 0 "$epilog_rc"
out=$RT/home/carol/job-200/jobscope-200.txt
check_eq "report: jobscope-200.txt written by the job's user (carol, uid $uid)" "$uid 600" "$(stat -c '%u %a' "$out" 2>&1)"
check_eq "report: the report is job 200's" 'Job 200 "alphafold"|Owner     user carol; account biology; partition gpu; qos normal; cluster hpc1' \
	"$(head -2 "$out" 2>&1 | paste -sd'|')"
check "report: it says the job ended" grep -q '^State     ENDED' "$out"
[ "$FAILS" = 0 ] || {
	log "report epilog notes: $(cat "$RT/var/tmp/report-epilog.log" 2>&1)"
	log "the report: $(head -20 "$out" 2>&1)"
}
kill $PPID_ $NSPID 2>/dev/null
wait $PPID_ $NSPID 2>/dev/null
# Nothing of this phase is left running (a subshell's pid once stood for
# each server, and killing it left the servers behind).
left=$(for p in $JPID $PPID_ $EPID; do kill -0 "$p" 2>/dev/null && echo "$p"; done)
check_eq "report: the exporters and Prometheus it started are stopped" "" "$left"
umount "$RT/proc"
