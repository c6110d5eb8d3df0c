# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# Sourced inside a test VM: jobscope installed as the README's "Install as a
# service" says, a real Prometheus scraping both modes, and the ground truth
# read from cgroupfs. Expects $SRC (the jobscope tree) and slurm.sh.

NODE_PORT=10817
CTL_PORT=10818
PROM_PORT=9090
UNIT_DIR=/etc/systemd/system

# install_node_unit: the README's node-mode steps, verbatim, with the tree
# the host built (`make build` ran there: the VM has no Go).
install_node_unit() {
	id jobscope >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin jobscope
	install -m 0755 "$SRC/bin/jobscope" /usr/bin/jobscope
	install -m 0755 "$SRC/bin/jobscope-report" /usr/bin/jobscope-report
	install -m 0644 "$SRC/contrib/systemd/jobscope.service" "$UNIT_DIR/"
	systemctl daemon-reload && systemctl enable --now jobscope
}

# unit_execstart UNIT-FILE: its ExecStart= line with the continuations joined.
unit_execstart() {
	sed -n '/^ExecStart=/,/[^\\]$/p' "$1" | sed -e 's/\\$//' -e 's/^ExecStart=//' | tr -s ' \n' ' '
}

# install_controller_unit: the README's controller-mode steps. The test's
# own settings go in a drop-in, as a site's would: a 5 s poll of every
# command, fairshare, licenses and reservations included (the shipped 30 s
# and 5 min would leave the assertions comparing against old snapshots)
# and, where slurmdbd runs, the sacct collector.
install_controller_unit() {
	local extra="--slurm.poll-interval=5s --slurm.slow-poll-interval=5s"
	[ "$DBD" = yes ] && extra+=" --collector.slurm_sacct --collector.slurm_sacct.since=1h"
	install -m 0644 "$SRC/contrib/systemd/jobscope-controller.service" "$UNIT_DIR/"
	mkdir -p "$UNIT_DIR/jobscope-controller.service.d"
	printf '[Service]\nExecStart=\nExecStart=%s %s\n' "$(unit_execstart "$SRC/contrib/systemd/jobscope-controller.service")" "$extra" \
		>"$UNIT_DIR/jobscope-controller.service.d/vmtest.conf"
	systemctl daemon-reload && systemctl enable --now jobscope-controller
}

# start_prometheus: Debian's Prometheus scraping both units every 5 s with
# contrib's rules, and its admin API (js1.sh deletes a job's series).
start_prometheus() {
	local f rules=""
	install -d -m 0755 /etc/vmtest /var/tmp/prom
	for f in "$SRC"/contrib/prometheus/*rules*.yml; do [ -f "$f" ] && rules+="  - $f"$'\n'; done
	cat >/etc/vmtest/prometheus.yml <<EOF
global:
  scrape_interval: 5s
  scrape_timeout: 4s
  evaluation_interval: 5s
rule_files:
$rules
scrape_configs:
  - job_name: jobscope
    static_configs:
      - targets: ['127.0.0.1:$NODE_PORT']
  - job_name: jobscope-controller
    static_configs:
      - targets: ['127.0.0.1:$CTL_PORT']
EOF
	chown -R prometheus /var/tmp/prom 2>/dev/null || true
	systemd-run --unit=vmtest-prometheus -p User=prometheus /usr/bin/prometheus \
		--config.file=/etc/vmtest/prometheus.yml --storage.tsdb.path=/var/tmp/prom \
		--web.listen-address=127.0.0.1:$PROM_PORT --web.enable-admin-api >/dev/null || die "prometheus did not start"
	need 60 prometheus curl -fsS -o /dev/null "http://127.0.0.1:$PROM_PORT/-/ready"
}
promq() { curl -fsS --max-time 20 "http://127.0.0.1:$PROM_PORT/api/v1/query" --data-urlencode "query=$1"; }
promv() { promq "$1" | jq -r '.data.result[0].value[1] // "absent"'; }

scrape() { curl -fsS --max-time 60 "http://127.0.0.1:$1/metrics" >"$2"; }

# --- ground truth from cgroupfs -------------------------------------------------

SCOPE=""
find_scope() {
	SCOPE=$(find /sys/fs/cgroup/system.slice -maxdepth 1 -name '*slurmstepd.scope' | head -1)
	[ -n "$SCOPE" ] || die "no slurmstepd scope under /sys/fs/cgroup/system.slice"
}
# sluid JOBID: the job's SLUID (Slurm 26.05+), empty before. -O JobID is the
# raw id, array tasks included (-j would match a whole array).
sluid() { squeue -h -a -r -O JobID:24,Sluid:24 2>/dev/null | awk -v j="$1" '$1 == j {print $2; exit}'; }
# jobdir JOBID: the job-level cgroup: job_<id>, or the SLUID directory.
jobdir() {
	local s
	[ -d "$SCOPE/job_$1" ] && { echo "$SCOPE/job_$1"; return; }
	s=$(sluid "$1")
	[ -n "$s" ] && [ -d "$SCOPE/$s" ] && echo "$SCOPE/$s"
}
# cgkey JOBID FILE KEY: a key of a flat-keyed cgroup file.
cgkey() { awk -v k="$3" '$1==k{print $2}' "$(jobdir "$1")/$2" 2>/dev/null; }
cgfile() { cat "$(jobdir "$1")/$2" 2>/dev/null; }
usage_s() { awk '$1=="usage_usec"{printf "%.6f\n", $2/1e6}' "$(jobdir "$1")/cpu.stat" 2>/dev/null; }
# cpulist "0-2,5": one CPU number a line.
cpulist() {
	tr ',' '\n' <<<"$1" | awk -F- 'NF==1{print $1} NF==2{for(i=$1;i<=$2;i++)print i}'
}

# isolate_core CPU: keep every running service (jobscope, Prometheus, Slurm's
# daemons, this test) off CPU, as core specialization does on HPC nodes, so
# a job's thread pinned there really runs alone and is never switched out.
# Jobs (in the slurmstepd scope) keep their own cpusets. unisolate undoes it.
ISOLATED_UNITS=()
isolate_core() {
	local others u
	others=$(seq 0 $(($(nproc) - 1)) | grep -vx "$1" | paste -sd, -)
	mapfile -t ISOLATED_UNITS < <(systemctl list-units --type=service --state=running --no-legend --plain | awk '{print $1}')
	for u in "${ISOLATED_UNITS[@]}"; do systemctl set-property --runtime "$u" AllowedCPUs="$others" 2>/dev/null; done
}
unisolate() {
	local u
	for u in "${ISOLATED_UNITS[@]}"; do systemctl set-property --runtime "$u" AllowedCPUs= 2>/dev/null; done
	ISOLATED_UNITS=()
}
