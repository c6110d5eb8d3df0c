#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# image.sh NAME: print the directory of VM NAME's cached image (disk.img,
# vmlinuz, initrd.img, packages.txt), building it first on a cache miss.
#
# The cache key is a hash of everything that goes into the image: this
# script, vms.sh and the files under boot/. A miss bootstraps the suite from
# the Debian registry the host's apt uses, installs the packages and a kernel
# in a chroot, and writes an ext4 image from the tree (mkfs.ext4 -d: no loop
# mount). Older images of the same VM are removed, so the cache holds one per
# VM. Nothing of the VM's test runs is baked in: boot/runner reads its script
# from a second disk at every boot, so changing a test never rebuilds.
#
# Environment: JOBSCOPE_VM_CACHE (default /var/cache/jobscope-vm).
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/vms.sh"
NAME=${1:?usage: image.sh NAME}
SUITE=$(vm_suite "$NAME") || { echo "unknown VM $NAME" >&2; exit 2; }
CACHE=${JOBSCOPE_VM_CACHE:-/var/cache/jobscope-vm}
KEY=$(cat "$HERE/image.sh" "$HERE/vms.sh" "$HERE"/boot/* | { cat; echo "$NAME"; } | sha256sum | cut -c1-16)
OUT=$CACHE/$NAME-$KEY

log() { printf '[image %s] %s\n' "$NAME" "$*" >&2; }

if [ -s "$OUT/disk.img" ] && [ -s "$OUT/vmlinuz" ] && [ -s "$OUT/initrd.img" ]; then
	echo "$OUT"
	exit 0
fi

MIRROR=$(awk '/^URIs:/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)
[ -n "$MIRROR" ] || MIRROR=$(awk '$1=="deb" {print $2; exit}' /etc/apt/sources.list 2>/dev/null || true)
[ -n "$MIRROR" ] || { echo "no Debian mirror in the host's apt sources" >&2; exit 2; }
for t in debootstrap mkfs.ext4; do
	command -v "$t" >/dev/null || { echo "$t missing (.ci/deps.sh installs it)" >&2; exit 2; }
done

mkdir -p "$CACHE"
BUILD=$(mktemp -d "$CACHE/.build-$NAME.XXXXXX")
ROOTFS=$BUILD/rootfs
cleanup() {
	local m
	for m in dev/pts dev proc sys; do mountpoint -q "$ROOTFS/$m" 2>/dev/null && umount -l "$ROOTFS/$m"; done
	rm -rf "$BUILD"
}
trap cleanup EXIT

T0=$(date +%s)
log "cache miss ($OUT): debootstrap $SUITE from $MIRROR"
debootstrap --variant=minbase --include=systemd,systemd-sysv,dbus "$SUITE" "$ROOTFS" "$MIRROR" \
	"/usr/share/debootstrap/scripts/$(vm_script "$NAME")" >"$BUILD/debootstrap.log" 2>&1 ||
	{ tail -20 "$BUILD/debootstrap.log" >&2; exit 1; }
log "debootstrap done in $(($(date +%s) - T0)) s"

# The registry here serves archived snapshots: their Release files are past
# Valid-Until.
printf 'Acquire::Check-Valid-Until "false";\nAcquire::Check-Date "false";\n' >"$ROOTFS/etc/apt/apt.conf.d/90vm-snapshot"
printf 'APT::Install-Recommends "false";\n' >"$ROOTFS/etc/apt/apt.conf.d/90vm-norecommends"
echo "deb $MIRROR $SUITE main" >"$ROOTFS/etc/apt/sources.list"
printf '#!/bin/sh\nexit 101\n' >"$ROOTFS/usr/sbin/policy-rc.d" # no daemon starts in the chroot
chmod 755 "$ROOTFS/usr/sbin/policy-rc.d"
mount -t proc proc "$ROOTFS/proc"
mount -t sysfs sysfs "$ROOTFS/sys"
mount --bind /dev "$ROOTFS/dev"
mount --bind /dev/pts "$ROOTFS/dev/pts"

pkgs=$VM_PACKAGES
[ "$(vm_dbd "$NAME")" = yes ] && pkgs="$pkgs $VM_DBD_PACKAGES"
in_chroot() { chroot "$ROOTFS" env DEBIAN_FRONTEND=noninteractive LC_ALL=C PATH=/usr/sbin:/usr/bin:/sbin:/bin "$@"; }
T1=$(date +%s)
# shellcheck disable=SC2086 # a word list
in_chroot apt-get update -qq >"$BUILD/apt.log" 2>&1 && in_chroot apt-get install -y -qq $pkgs >>"$BUILD/apt.log" 2>&1 ||
	{ tail -30 "$BUILD/apt.log" >&2; exit 1; }
log "packages and kernel installed in $(($(date +%s) - T1)) s"

if [ "$(vm_dbd "$NAME")" = yes ] && [ "$SUITE" != bookworm ]; then
	# slurmdbd 24.11 and 26.05 refuse libmariadb3 11.8 at start
	# (_check_mysql_concat_is_sane); bookworm's 10.11 client library works.
	# It is unpacked aside and given to slurmdbd alone (boot/slurmdbd-libmariadb.conf).
	echo "deb $MIRROR bookworm main" >"$ROOTFS/etc/apt/sources.list.d/bookworm.list"
	in_chroot apt-get update -qq >>"$BUILD/apt.log" 2>&1
	in_chroot sh -c 'cd /tmp && apt-get download -qq libmariadb3/bookworm' >>"$BUILD/apt.log" 2>&1 ||
		{ tail -10 "$BUILD/apt.log" >&2; exit 1; }
	in_chroot sh -c 'dpkg-deb -x /tmp/libmariadb3_*.deb /opt/libmariadb-bookworm && rm /tmp/libmariadb3_*.deb'
	rm "$ROOTFS/etc/apt/sources.list.d/bookworm.list"
	in_chroot apt-get update -qq >>"$BUILD/apt.log" 2>&1
	install -D -m 0644 "$HERE/boot/slurmdbd-libmariadb.conf" "$ROOTFS/etc/systemd/system/slurmdbd.service.d/bookworm-libmariadb.conf"
fi

# Daemons start when a test has written their configuration, not at boot.
for u in munge slurmctld slurmd slurmdbd mariadb prometheus; do
	in_chroot systemctl disable "$u" >/dev/null 2>&1 || true
done
echo node1 >"$ROOTFS/etc/hostname"
printf '127.0.0.1\tlocalhost\n127.0.1.1\tnode1\n' >"$ROOTFS/etc/hosts"
echo "/dev/vda / ext4 rw,relatime 0 1" >"$ROOTFS/etc/fstab"
install -m 0755 "$HERE/boot/runner" "$ROOTFS/usr/local/sbin/vmtest-runner"
install -m 0644 "$HERE/boot/vmtest-lo.service" "$HERE/boot/vmtest.service" "$ROOTFS/etc/systemd/system/"
in_chroot systemctl enable vmtest-lo.service vmtest.service >/dev/null 2>&1
in_chroot apt-get clean
rm -f "$ROOTFS/usr/sbin/policy-rc.d"
in_chroot dpkg-query -W -f '${Package} ${Version}\n' >"$BUILD/packages.txt"
cleanup_mounts() { for m in dev/pts dev proc sys; do umount -l "$ROOTFS/$m"; done; }
cleanup_mounts

mkdir -p "$BUILD/out"
cp "$(ls -1 "$ROOTFS"/boot/vmlinuz-* | sort -V | tail -1)" "$BUILD/out/vmlinuz"
cp "$(ls -1 "$ROOTFS"/boot/initrd.img-* | sort -V | tail -1)" "$BUILD/out/initrd.img"
chmod 644 "$BUILD/out/vmlinuz" "$BUILD/out/initrd.img"
mv "$BUILD/packages.txt" "$BUILD/out/"
truncate -s 4G "$BUILD/out/disk.img"
mkfs.ext4 -q -F -L vmroot -d "$ROOTFS" "$BUILD/out/disk.img"
rm -rf "$CACHE/$NAME"-* # the previous key's image
mv "$BUILD/out" "$OUT"
log "image built in $(($(date +%s) - T0)) s: $OUT ($(du -sh --apparent-size "$OUT/disk.img" | cut -f1) sparse, $(du -sh "$OUT/disk.img" | cut -f1) used)"
echo "$OUT"
