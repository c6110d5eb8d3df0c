#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# image.sh: print the directory of the site image (disk.img, vmlinuz,
# initrd.img, packages.txt), building it first on a cache miss.
#
# The site image is VM C's (forky, Slurm 26.05, kernel 7.2: test/vm/image.sh
# builds and caches it) plus what a whole site needs besides: Open MPI and a
# compiler for the MPI job, and Debian's Alertmanager. Deriving it from C
# costs one package install instead of a debootstrap, and leaves C's cache
# key (which hashes test/vm/vms.sh) alone, so the VM suite never rebuilds
# because of the site. The key hashes this script and C's image directory
# name, so a new C image makes a new site image.
#
# Environment: JOBSCOPE_VM_CACHE (default /var/cache/jobscope-vm).
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
CACHE=${JOBSCOPE_VM_CACHE:-/var/cache/jobscope-vm}
BASE=$("$HERE/../vm/image.sh" C)
KEY=$(cat "$HERE/image.sh" | { cat; basename "$BASE"; } | sha256sum | cut -c1-16)
OUT=$CACHE/site-$KEY
SITE_PACKAGES="openmpi-bin libopenmpi-dev gcc libc6-dev prometheus-alertmanager"

log() { printf '[image site] %s\n' "$*" >&2; }

if [ -s "$OUT/disk.img" ] && [ -s "$OUT/vmlinuz" ] && [ -s "$OUT/initrd.img" ]; then
	echo "$OUT"
	exit 0
fi

T0=$(date +%s)
mkdir -p "$CACHE"
BUILD=$(mktemp -d "$CACHE/.build-site.XXXXXX")
MNT=$BUILD/mnt
cleanup() {
	local m
	for m in dev/pts dev proc sys ""; do
		mountpoint -q "$MNT/$m" 2>/dev/null && umount -l "$MNT/$m"
	done
	rm -rf "$BUILD"
}
trap cleanup EXIT

log "cache miss ($OUT): $SITE_PACKAGES over $(basename "$BASE")"
mkdir -p "$BUILD/out" "$MNT"
cp --sparse=always "$BASE/disk.img" "$BUILD/out/disk.img"
# Open MPI and gcc take about 400 MiB; the image grows to 6 GiB (sparse).
truncate -s 6G "$BUILD/out/disk.img"
e2fsck -fy "$BUILD/out/disk.img" >/dev/null 2>&1 || true
resize2fs -f "$BUILD/out/disk.img" >/dev/null 2>&1
mount -o loop "$BUILD/out/disk.img" "$MNT"
mount -t proc proc "$MNT/proc"
mount -t sysfs sysfs "$MNT/sys"
mount --bind /dev "$MNT/dev"
mount --bind /dev/pts "$MNT/dev/pts"
printf '#!/bin/sh\nexit 101\n' >"$MNT/usr/sbin/policy-rc.d" # no daemon starts in the chroot
chmod 755 "$MNT/usr/sbin/policy-rc.d"
in_chroot() { chroot "$MNT" env DEBIAN_FRONTEND=noninteractive LC_ALL=C PATH=/usr/sbin:/usr/bin:/sbin:/bin "$@"; }
# shellcheck disable=SC2086 # a word list
in_chroot apt-get update -qq >"$BUILD/apt.log" 2>&1 && in_chroot apt-get install -y -qq $SITE_PACKAGES >>"$BUILD/apt.log" 2>&1 ||
	{ tail -30 "$BUILD/apt.log" >&2; exit 1; }
# Daemons start when the site test has written their configuration.
in_chroot systemctl disable prometheus-alertmanager >/dev/null 2>&1 || true
in_chroot apt-get clean
rm -f "$MNT/usr/sbin/policy-rc.d"
in_chroot dpkg-query -W -f '${Package} ${Version}\n' >"$BUILD/out/packages.txt"
for m in dev/pts dev proc sys ""; do umount "$MNT/$m"; done
cp "$BASE/vmlinuz" "$BASE/initrd.img" "$BUILD/out/"
rm -rf "$CACHE"/site-* # the previous key's image
mv "$BUILD/out" "$OUT"
log "image built in $(($(date +%s) - T0)) s: $OUT"
echo "$OUT"
