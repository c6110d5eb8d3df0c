#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A whole site (make site-e2e): three VMs from the site image (image.sh:
# VM C's forky image plus Open MPI and Alertmanager), each with a payload
# disk holding jobscope's .deb from `make package`, the guest scripts and
# the site's munge key, on one network segment that exists only between
# the qemu processes (vde_switch on a unix socket in the work directory: no
# tap, bridge or host interface):
#   ctl 10.77.0.10  slurmctld, slurmdbd + MariaDB, Prometheus, Alertmanager,
#                   jobscope's controller unit (guest/ctl.sh)
#   c1  10.77.0.11  slurmd, jobscope's node unit (guest/node.sh)
#   c2  10.77.0.12  the same
# Each VM writes its assertion table to its payload disk, read back after
# power-off (debugfs); serial logs stay in the work directory. Every qemu
# and vde_switch process is killed at exit, on failure too.
#
# The site starts on the .deb of an earlier commit (SITE_OLD_COMMIT), built
# once in a git worktree of it and cached in the work directory's debs/ by
# commit, and is upgraded to dist/'s while jobs run.
#
# Environment: JOBSCOPE_SITE_DIR (work directory, default /tmp/jobscope-site),
# JOBSCOPE_SITE_TIMEOUT (seconds for the whole run, default 2700),
# SITE_PAYLOAD_MB (the MPI job's bytes each way, default 64), SITE_BURN_S
# (seconds of CPU each job burns, default 20), JOBSCOPE_VM_CACHE.
set -uo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
WORK=${JOBSCOPE_SITE_DIR:-/tmp/jobscope-site}
TIMEOUT=${JOBSCOPE_SITE_TIMEOUT:-2700}
T0=$(date +%s)
log() { printf '[site %4ds] %s\n' "$(($(date +%s) - T0))" "$*" >&2; }
die() {
	log "FATAL: $*"
	exit 2
}

# One VM user at a time on this machine (test/vm/run.sh takes the same lock).
if [ "${JOBSCOPE_VM_LOCKED:-}" != 1 ] && [ "$(id -u)" = 0 ]; then
	JOBSCOPE_VM_LOCKED=1 exec flock /tmp/jobscope-vm.lock bash "$0" "$@"
fi
[ "$(id -u)" = 0 ] || die "must run as root (image, chroot)"

# The earlier commit: the first that pins the programs' links (bd735be,
# "bpf: pin the programs' links..."), so the upgrade hands the attached
# programs over. An upgrade from before it detaches them for the restart
# (docs/ebpf.md says what that loses). Fixed, so the cache holds; it needs
# a clone with history.
OLD_COMMIT=${SITE_OLD_COMMIT:-bd735be88e93f78628136c5fa4801152098c9182}
DEB=$(ls "$ROOT"/dist/jobscope_*_amd64.deb 2>/dev/null | sort -V | tail -1)
[ -f "$DEB" ] || die "no dist/jobscope_*_amd64.deb: run make package (make site-e2e does)"
for p in qemu-system-x86 e2fsprogs vde2; do
	dpkg -s "$p" >/dev/null 2>&1 && continue
	log "apt-get install $p"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$p" >/dev/null || die "apt-get install $p failed"
done

# old_deb: the cached .deb of OLD_COMMIT, built on a miss (make package in
# a detached worktree, removed afterwards).
old_deb() {
	local c=$WORK/debs/$OLD_COMMIT wt deb
	deb=$(ls "$c"/jobscope_*_amd64.deb 2>/dev/null | head -1)
	[ -f "$deb" ] && { echo "$deb"; return 0; }
	git -C "$ROOT" cat-file -e "$OLD_COMMIT^{commit}" 2>/dev/null || { log "commit $OLD_COMMIT not in this clone (a shallow one?)"; return 1; }
	wt=$(mktemp -d /tmp/jobscope-site-old.XXXXXX)
	log "building the earlier .deb ($OLD_COMMIT) in $wt"
	git -C "$ROOT" worktree add -q --detach "$wt/src" "$OLD_COMMIT" &&
		make -C "$wt/src" package PKG_ARCHES=amd64 >"$wt/package.log" 2>&1 &&
		mkdir -p "$c" && cp "$wt"/src/dist/jobscope_*_amd64.deb "$c/"
	local rc=$?
	[ $rc = 0 ] || tail -20 "$wt/package.log" >&2
	git -C "$ROOT" worktree remove --force "$wt/src" >/dev/null 2>&1
	rm -rf "$wt"
	[ $rc = 0 ] || return 1
	ls "$c"/jobscope_*_amd64.deb | head -1
}

PIDS=()
cleanup() {
	local p i
	for p in "${PIDS[@]}"; do
		kill -0 "$p" 2>/dev/null || continue
		kill -TERM "$p" 2>/dev/null
		for ((i = 0; i < 50; i++)); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$p" 2>/dev/null
	done
	collect
	rm -rf "$WORK"/*/payload.img "$WORK"/*/payload "$WORK/switch" "$WORK/munge.key"
}
# collect: each VM's out/ (table, guest log, journal, metrics) from its
# payload disk, also when the run is cut short.
collect() {
	local n
	for n in ctl c1 c2; do
		[ -f "$WORK/$n/payload.img" ] && [ ! -d "$WORK/$n/out" ] || continue
		debugfs -R "rdump /out $WORK/$n" "$WORK/$n/payload.img" >/dev/null 2>&1
	done
}
trap 'rc=$?; cleanup; exit $rc' EXIT
trap 'exit 130' INT TERM

main() {
IMG=$(bash "$HERE/image.sh") || die "site image failed"
mkdir -p "$WORK" && find "$WORK" -mindepth 1 -maxdepth 1 ! -name debs -exec rm -rf {} +
OLD_DEB=$(old_deb) || die "no .deb of the earlier commit $OLD_COMMIT"

# The site's one munge key, on every VM's payload.
dd if=/dev/urandom of="$WORK/munge.key" bs=1024 count=1 status=none

declare -A IP=([ctl]=10.77.0.10 [c1]=10.77.0.11 [c2]=10.77.0.12)
declare -A MEM=([ctl]=3072 [c1]=2560 [c2]=2560)
declare -A MAC=([ctl]=52:54:00:77:00:10 [c1]=52:54:00:77:00:11 [c2]=52:54:00:77:00:12)
payload() { # NAME
	local n=$1 d=$WORK/$1/payload role=node
	[ "$n" = ctl ] && role=ctl
	mkdir -p "$d/src/test" "$d/src/dist"
	cp -r "$ROOT/test/site" "$ROOT/test/lib" "$d/src/test/"
	mkdir -p "$d/src/test/vm" && cp -r "$ROOT/test/vm/guest" "$d/src/test/vm/"
	cp "$DEB" "$d/src/dist/"
	mkdir -p "$d/src/old" && cp "$OLD_DEB" "$d/src/old/"
	install -m 0400 "$WORK/munge.key" "$d/src/test/site/munge.key"
	printf 'ROLE=%s\nIP=%s\nSITE_PAYLOAD_MB=%s\nSITE_BURN_S=%s\n' "$n" "${IP[$n]}" \
		"${SITE_PAYLOAD_MB:-64}" "${SITE_BURN_S:-20}" >"$d/src/test/site/site.env"
	printf '#!/bin/sh\nexec bash /payload/src/test/site/guest/%s.sh\n' "$role" >"$d/entry"
	chmod 755 "$d/entry"
	truncate -s 1G "$WORK/$n/payload.img"
	mkfs.ext4 -q -F -L payload -d "$d" "$WORK/$n/payload.img"
}

vde_switch --sock "$WORK/switch" --daemon --pidfile "$WORK/switch.pid" --mod 0700 || die "vde_switch did not start"
for ((i = 0; i < 50; i++)); do [ -s "$WORK/switch.pid" ] && break; sleep 0.1; done
PIDS+=("$(cat "$WORK/switch.pid")")

declare -A QPID START TOOK
for n in ctl c1 c2; do
	mkdir -p "$WORK/$n"
	payload "$n" || die "payload for $n failed"
	log "VM $n: boot (${IP[$n]}, 2 vCPUs, ${MEM[$n]} MiB), serial log $WORK/$n/serial.log"
	TMPDIR=$WORK/$n qemu-system-x86_64 -accel tcg,thread=multi -cpu max -m "${MEM[$n]}" -smp 2 \
		-kernel "$IMG/vmlinuz" -initrd "$IMG/initrd.img" \
		-append "console=ttyS0 root=/dev/vda rw quiet panic=-1 systemd.mask=serial-getty@ttyS0.service" \
		-drive "file=$IMG/disk.img,format=raw,if=virtio,snapshot=on" \
		-drive "file=$WORK/$n/payload.img,format=raw,if=virtio" \
		-netdev "vde,id=n0,sock=$WORK/switch" -device "virtio-net-pci,netdev=n0,mac=${MAC[$n]}" \
		-display none -monitor none -serial "file:$WORK/$n/serial.log" -no-reboot &
	QPID[$n]=$!
	PIDS+=("${QPID[$n]}")
	START[$n]=$(date +%s)
done

# Wait for all three; once ctl is off, the nodes have a grace period to
# write their tables (they wait for ctl's end phase, which they may miss).
ctl_off=""
while :; do
	alive=0
	for n in ctl c1 c2; do
		if kill -0 "${QPID[$n]}" 2>/dev/null; then
			alive=$((alive + 1))
		elif [ -z "${TOOK[$n]:-}" ]; then
			TOOK[$n]=$(($(date +%s) - START[$n]))
			log "VM $n: off after ${TOOK[$n]} s"
		fi
	done
	[ $alive = 0 ] && break
	[ -n "${TOOK[ctl]:-}" ] && [ -z "$ctl_off" ] && ctl_off=$(date +%s)
	if [ -n "$ctl_off" ] && (($(date +%s) - ctl_off > 180)); then
		log "nodes still up 180 s after ctl: killed"
		break
	fi
	if (($(date +%s) - T0 > TIMEOUT)); then
		log "site still running after $TIMEOUT s: killed"
		break
	fi
	sleep 5
done
cleanup_vms() { for n in ctl c1 c2; do kill -KILL "${QPID[$n]}" 2>/dev/null; wait "${QPID[$n]}" 2>/dev/null; done; }
cleanup_vms

FAIL=0
collect
declare -A RC
for n in ctl c1 c2; do
	rc=$(grep -a -o 'VMTEST-END rc=[0-9]*' "$WORK/$n/serial.log" | tail -1 | cut -d= -f2)
	RC[$n]=${rc:-none}
	[ "${rc:-x}" = 0 ] || FAIL=1
	if [ -s "$WORK/$n/out/table.txt" ]; then
		printf '\n=== %s: %s s wall, guest rc=%s ===\n' "$n" "${TOOK[$n]:-killed}" "${rc:-none}"
		cat "$WORK/$n/out/table.txt"
	else
		printf '\n=== %s: %s s wall, guest rc=%s, no table (see %s) ===\n' "$n" "${TOOK[$n]:-killed}" "${rc:-none}" "$WORK/$n"
	fi
done
# The last lines are what CI shows of a failed run: repeat each VM's
# result and its failed rows there, and its serial log's tail where a VM
# wrote no table.
printf '\n=== site summary ===\n'
for n in ctl c1 c2; do
	printf '%s: %s s wall, guest rc=%s\n' "$n" "${TOOK[$n]:-killed}" "${RC[$n]}"
	if [ -s "$WORK/$n/out/table.txt" ]; then
		grep -a -E ' (FAIL|SKIP)$' "$WORK/$n/out/table.txt" | sed "s/^/  /"
	else
		tail -n 15 "$WORK/$n/serial.log" 2>/dev/null | sed "s/^/  $n: /"
	fi
done
cleanup
left=""
for p in "${PIDS[@]}"; do kill -0 "$p" 2>/dev/null && left+="pid $p "; done
[ -n "$left" ] && { log "FAIL: left behind: $left"; FAIL=1; }
log "site: $(($(date +%s) - T0)) s in all; result $([ $FAIL = 0 ] && echo PASS || echo FAIL)"
return $FAIL
}

# Everything above is only definitions: bash has read the whole file before
# main runs, so editing it during a run cannot derail that run.
main; exit $?
