#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# jobscope in full Debian VMs (make vm-e2e): for each VM (test/vm/vms.sh),
# a cached root filesystem image (image.sh), a payload disk with the jobscope
# tree and the guest scripts, and one unattended qemu boot (TCG: KVM does not
# work on this machine kind) that runs the test and powers off. The results
# come back on the payload disk.
#
#   test/vm/run.sh [A B C]            the end-to-end test (guest/e2e.sh)
#   test/vm/run.sh --capture [B C]    real Slurm captures (guest/capture.sh)
#
# Root only. Every qemu process and per-run disk is removed at exit, on
# failure too; the serial logs, guest logs and assertion tables stay in the
# work directory. Settings (environment):
#   JOBSCOPE_BIN            jobscope binary (default bin/jobscope)
#   JOBSCOPE_REPORT_BIN     jobscope-report binary (default: next to JOBSCOPE_BIN)
#   JOBSCOPE_VM_DIR         work directory (default /tmp/jobscope-vm)
#   JOBSCOPE_VM_CACHE       image cache (default /var/cache/jobscope-vm)
#   JOBSCOPE_VM_SMP, _MEM   vCPUs (default 4) and MiB (default 3584) per VM
#   JOBSCOPE_VM_TIMEOUT     seconds one VM may run (default 1500)
#   JOBSCOPE_VM_HANG        seconds without console output that count as a
#                           hung guest, killed and retried (default 300)
#   JOBSCOPE_VM_SHELL=1     a root shell on the VM's second serial port,
#                           the unix socket $JOBSCOPE_VM_DIR/NAME/ttyS1.sock
#   JOBSCOPE_VM_ENTRY       guest script instead of e2e.sh (shell.sh: Slurm
#                           and the units up, then idle until /tmp/done exists;
#                           rpcload.sh: slurmctld's RPC load, RPC_POLLS and
#                           RPC_INTERVAL passed into the guest)
#   JOBSCOPE_VM_EXTRA_PACKAGES  packages for images derived from the suite's
#                           (image-plus.sh); --capture and rpcload.sh add
#                           slurmrestd, which they measure
set -uo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
. "$HERE/vms.sh"
BIN=${JOBSCOPE_BIN:-$ROOT/bin/jobscope}
REPORT_BIN=${JOBSCOPE_REPORT_BIN:-$(dirname "$BIN")/jobscope-report}
WORK=${JOBSCOPE_VM_DIR:-/tmp/jobscope-vm}
SMP=${JOBSCOPE_VM_SMP:-4}
MEM=${JOBSCOPE_VM_MEM:-3584}
VM_TIMEOUT=${JOBSCOPE_VM_TIMEOUT:-1500}
# A guest silent this long is hung (TCG has frozen guests here, once in VM C
# after 231 s: no heartbeat, no panic); it is killed and booted again.
HANG_S=${JOBSCOPE_VM_HANG:-300}
T0=$(date +%s)

log() { printf '[vm %4ds] %s\n' "$(($(date +%s) - T0))" "$*" >&2; }
die() {
	log "FATAL: $*"
	exit 2
}

# One VM at a time on this machine: TCG guests use every core.
if [ "${JOBSCOPE_VM_LOCKED:-}" != 1 ] && [ "$(id -u)" = 0 ]; then
	JOBSCOPE_VM_LOCKED=1 exec flock /tmp/jobscope-vm.lock bash "$0" "$@"
fi

MODE=e2e
if [ "${1:-}" = --capture ]; then
	MODE=capture
	shift
fi
VMS=("$@")
# The measuring tools ask slurmrestd too; the suite's images go without it.
if [ $MODE = capture ] || [ "${JOBSCOPE_VM_ENTRY:-}" = rpcload.sh ]; then
	export JOBSCOPE_VM_EXTRA_PACKAGES="${JOBSCOPE_VM_EXTRA_PACKAGES:-slurmrestd}"
fi
[ ${#VMS[@]} -gt 0 ] || { if [ $MODE = capture ]; then VMS=(B C); else VMS=(A B C); fi; }

[ "$(id -u)" = 0 ] || die "must run as root (debootstrap, chroot)"
[ -x "$BIN" ] || die "$BIN not found: run make build (make vm-e2e does)"
[ -x "$REPORT_BIN" ] || die "$REPORT_BIN not found: run make build (make vm-e2e does)"
install_tools() {
	local p missing=()
	for p in qemu-system-x86 debootstrap e2fsprogs; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
	[ ${#missing[@]} -eq 0 ] && return 0
	log "apt-get install ${missing[*]}"
	{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"; } >/dev/null ||
		die "apt-get install ${missing[*]} failed"
}
install_tools

QEMU_PIDS=()
cleanup() {
	local p i
	for p in "${QEMU_PIDS[@]}"; do
		kill -0 "$p" 2>/dev/null || continue
		kill -TERM "$p" 2>/dev/null
		for ((i = 0; i < 50; i++)); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$p" 2>/dev/null
	done
	rm -rf "$WORK"/*/payload.img "$WORK"/*/payload "$WORK"/*/ttyS1.sock
}
# left_behind: what a run must not leave: a qemu process of ours, a payload
# disk, an image build directory (image.sh removes its own on exit).
left_behind() {
	local p f
	for p in "${QEMU_PIDS[@]}"; do kill -0 "$p" 2>/dev/null && printf 'qemu pid %s ' "$p"; done
	for f in "$WORK"/*/payload.img "${JOBSCOPE_VM_CACHE:-/var/cache/jobscope-vm}"/.build-*; do
		[ -e "$f" ] && printf '%s ' "$f"
	done
}
on_exit() {
	local rc=$? left
	cleanup
	left=$(left_behind)
	[ -n "$left" ] && log "WARNING: left behind: $left"
	exit "$rc"
}
trap on_exit EXIT
trap 'exit 130' INT TERM

# payload DIR ENTRY: the second disk's tree: jobscope as `make build` made
# it, contrib/, the guest scripts and the entry point.
payload() {
	local dir=$1 entry=$2 name=$3
	rm -rf "$dir"
	mkdir -p "$dir/src/bin" "$dir/src/test"
	install -m 0755 "$BIN" "$dir/src/bin/jobscope"
	install -m 0755 "$REPORT_BIN" "$dir/src/bin/jobscope-report"
	cp -r "$ROOT/contrib" "$ROOT/README.md" "$dir/src/"
	cp -r "$ROOT/test/vm" "$ROOT/test/lib" "$dir/src/test/"
	rm -rf "$dir/src/test/vm/boot"
	printf 'VM=%s\nDBD=%s\nSUITE=%s\n' "$name" "$(vm_dbd "$name")" "$(vm_suite "$name")" >"$dir/src/test/vm/vm.env"
	# guest/rpcload.sh's window (RPC_POLLS intervals of RPC_INTERVAL s).
	env | grep -E '^RPC_(POLLS|INTERVAL)=[0-9]+$' >>"$dir/src/test/vm/vm.env"
	{
		echo '#!/bin/sh'
		# JOBSCOPE_VM_SHELL=1: a root shell on the VM's second serial port
		# (the unix socket $WORK/NAME/ttyS1.sock), for debugging a stuck run.
		[ "${JOBSCOPE_VM_SHELL:-0}" = 1 ] &&
			echo "setsid sh -c 'while :; do bash -i </dev/ttyS1 >/dev/ttyS1 2>&1; sleep 1; done' </dev/null >/dev/null 2>&1 &"
		echo "exec bash /payload/src/test/vm/guest/$entry"
	} >"$dir/entry"
	chmod 755 "$dir/entry"
}

# kernel_crash NAME DIR: a guest kernel that died (Oops, BUG, panic) is a
# result, not a flaky boot: say where it died, in the log and as the VM's
# table row (the guest never wrote its own table).
kernel_crash() {
	local name=$1 dir=$2 what
	grep -aqE 'Kernel panic|Oops: |BUG: ' "$dir/serial.log" || return 0
	what="$(grep -a -m1 -oE '(BUG|Oops): .*' "$dir/serial.log"); $(grep -a -m1 -oE 'RIP: 0010:[^ ]+' "$dir/serial.log"); $(grep -a -m1 -oE 'bpf_prog_[0-9a-f]+_[a-z_]+' "$dir/serial.log")"
	log "VM $name: KERNEL CRASH: $what (serial log $dir/serial.log)"
	mkdir -p "$dir/out"
	(
		ROWS=() FAILS=0
		. "$ROOT/test/lib/assert.sh"
		row "guest kernel stayed up (serial log)" "no Oops, BUG or panic" "$what" FAIL
		print_table
	) >>"$dir/out/table.txt"
}

# tcg_int3 SERIAL-LOG: the guest kernel died of "Oops: int3" with no BPF
# program on the stack. The kernel patches its own code live (static keys:
# attaching the first sched_switch program flips the tracepoint's) by
# putting an int3 on the site first; qemu's multi-threaded TCG now and then
# lets another vCPU run that int3 after the patch is done, and the kernel
# takes it for a real breakpoint. Seen at boot (sched_clock_cpu) and once at
# run time (VM B, __schedule+0x343, the sched_switch tracepoint, on a 5-byte
# NOP being patched). Real CPUs synchronize this; a crash inside a BPF
# program (F11) is never retried.
tcg_int3() {
	grep -aq 'Oops: int3' "$1" && ! grep -aq 'bpf_prog_' "$1"
}

# boot NAME ENTRY: boot VM NAME with the payload running guest/ENTRY; its
# out/ directory lands in $WORK/NAME/out. Retries a boot that never reached
# userspace (about one boot in six panics early under TCG).
boot() {
	local name=$1 entry=$2 img dir=$WORK/$1 try pid t rc
	if [ -n "${JOBSCOPE_VM_EXTRA_PACKAGES:-}" ]; then
		# shellcheck disable=SC2086 # a word list
		img=$("$HERE/image-plus.sh" "$name" "$name-plus" $JOBSCOPE_VM_EXTRA_PACKAGES) || return 1
	else
		img=$("$HERE/image.sh" "$name") || return 1
	fi
	for try in 1 2 3; do
		payload "$dir/payload" "$entry" "$name"
		rm -f "$dir/payload.img"
		truncate -s 1G "$dir/payload.img"
		mkfs.ext4 -q -F -L payload -d "$dir/payload" "$dir/payload.img" || return 1
		log "VM $name: boot (try $try, smp $SMP, ${MEM} MiB), serial log $dir/serial.log"
		TMPDIR=$dir qemu-system-x86_64 -accel tcg,thread=multi -cpu max -m "$MEM" -smp "$SMP" \
			-kernel "$img/vmlinuz" -initrd "$img/initrd.img" \
			-append "console=ttyS0 root=/dev/vda rw quiet panic=-1 systemd.mask=serial-getty@ttyS0.service" \
			-drive "file=$img/disk.img,format=raw,if=virtio,snapshot=on" \
			-drive "file=$dir/payload.img,format=raw,if=virtio" \
			-display none -monitor none -serial "file:$dir/serial.log" \
			-serial "unix:$dir/ttyS1.sock,server=on,wait=off" -nic none -no-reboot &
		pid=$!
		QEMU_PIDS+=("$pid")
		t=$(date +%s)
		hung=no
		while kill -0 "$pid" 2>/dev/null; do
			if (($(date +%s) - t > VM_TIMEOUT)); then
				log "VM $name: still running after $VM_TIMEOUT s: killed"
				kill -KILL "$pid"
			elif (($(date +%s) - t > HANG_S)) && [ -n "$(find "$dir/serial.log" -mmin +$((HANG_S / 60)))" ]; then
				# The guest scripts print a heartbeat every 60 s.
				hung=yes
				log "VM $name: no console output for $HANG_S s: guest hung, killed"
				kill -KILL "$pid"
			fi
			sleep 2
		done
		wait "$pid" 2>/dev/null
		cp "$dir/serial.log" "$dir/serial-try$try.log"
		if [ $hung = yes ] && [ "$try" -lt 3 ]; then
			log "VM $name: retrying a hung guest (its console: $dir/serial-try$try.log)"
			continue
		fi
		if tcg_int3 "$dir/serial.log" && [ "$try" -lt 3 ]; then
			log "VM $name: guest kernel hit a stray int3 while patching its code (TCG, not jobscope): retrying ($(grep -a -m1 -oE 'RIP: 0010:[^ ]+' "$dir/serial.log"))"
			continue
		fi
		if grep -q VMTEST-BEGIN "$dir/serial.log"; then break; fi
		log "VM $name: no userspace in try $try (serial log: $(grep -m1 -E 'Oops|panic|BUG' "$dir/serial.log" || tail -1 "$dir/serial.log"))"
	done
	rm -rf "$dir/out"
	debugfs -R "rdump /out $dir" "$dir/payload.img" >/dev/null 2>&1
	rm -f "$dir/payload.img"
	rm -rf "$dir/payload"
	kernel_crash "$name" "$dir"
	rc=$(grep -a -o 'VMTEST-END rc=[0-9]*' "$dir/serial.log" | tail -1 | cut -d= -f2)
	log "VM $name: done in $(($(date +%s) - t)) s, guest rc=${rc:-none}"
	[ -n "$rc" ] || return 1
	return "$rc"
}

main() {
	local v t
	mkdir -p "$WORK"
	FAIL=0
	declare -A TOOK
	for v in "${VMS[@]}"; do
		vm_suite "$v" >/dev/null || die "unknown VM $v (A, B or C)"
		mkdir -p "$WORK/$v"
		t=$(date +%s)
		case $MODE in
		capture) boot "$v" capture.sh || FAIL=1 ;;
		e2e) boot "$v" "${JOBSCOPE_VM_ENTRY:-e2e.sh}" || FAIL=1 ;;
		esac
		TOOK[$v]=$(($(date +%s) - t))
	done
	for v in "${VMS[@]}"; do
		if [ -s "$WORK/$v/out/table.txt" ]; then
			printf '\n=== VM %s (%s): %s s in all ===\n' "$v" "$(vm_suite "$v")" "${TOOK[$v]}"
			cat "$WORK/$v/out/table.txt"
		else
			printf '\n=== VM %s (%s): %s s, no table (see %s) ===\n' "$v" "$(vm_suite "$v")" "${TOOK[$v]}" "$WORK/$v"
		fi
	done
	cleanup
	local left
	left=$(left_behind)
	if [ -n "$left" ]; then
		log "FAIL: left behind: $left"
		FAIL=1
	else
		log "left behind: nothing (no qemu process, payload disk or image build of this run)"
	fi
	log "total $(($(date +%s) - T0)) s"
	return $FAIL
}

# Everything above is only definitions: bash has read the whole file before
# main runs, so editing it during a run cannot derail that run.
main; exit $?
