#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# image-plus.sh BASE TAG PACKAGE...: print the directory of an image
# derived from VM BASE's (image.sh) with more packages installed (disk.img,
# vmlinuz, initrd.img, packages.txt), building it first on a cache miss.
#
# Deriving costs one package install instead of a debootstrap, and leaves
# BASE's cache key (which hashes vms.sh and image.sh) alone, so the VM suite
# never rebuilds because of an image that needs more: the site's (TAG site:
# Open MPI, a compiler, Alertmanager, slurmrestd) and the measuring tools'
# (run.sh --capture and rpcload.sh: slurmrestd). The key hashes this
# script, BASE's image directory name and the packages, so a new BASE image
# makes a new derived one; each TAG keeps one image in the cache. Installed
# services stay disabled: the tests start them with their configuration.
#
# Environment: JOBSCOPE_VM_CACHE (default /var/cache/jobscope-vm).
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
NAME=${1:?usage: image-plus.sh BASE TAG PACKAGE...}
TAG=${2:?usage: image-plus.sh BASE TAG PACKAGE...}
shift 2
[ $# -gt 0 ] || { echo "image-plus.sh: no packages" >&2; exit 2; }
PACKAGES="$*"
CACHE=${JOBSCOPE_VM_CACHE:-/var/cache/jobscope-vm}
BASE=$("$HERE/image.sh" "$NAME")
KEY=$({ cat "$HERE/image-plus.sh"; basename "$BASE"; echo "$PACKAGES"; } | sha256sum | cut -c1-16)
OUT=$CACHE/$TAG-$KEY

log() { printf '[image %s] %s\n' "$TAG" "$*" >&2; }

if [ -s "$OUT/disk.img" ] && [ -s "$OUT/vmlinuz" ] && [ -s "$OUT/initrd.img" ]; then
	echo "$OUT"
	exit 0
fi

T0=$(date +%s)
mkdir -p "$CACHE"
BUILD=$(mktemp -d "$CACHE/.build-$TAG.XXXXXX")
MNT=$BUILD/mnt
cleanup() {
	local m
	for m in dev/pts dev proc sys ""; do
		mountpoint -q "$MNT/$m" 2>/dev/null && umount -l "$MNT/$m"
	done
	rm -rf "$BUILD"
}
trap cleanup EXIT

log "cache miss ($OUT): $PACKAGES over $(basename "$BASE")"
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
in_chroot apt-get update -qq >"$BUILD/apt.log" 2>&1 && in_chroot apt-get install -y -qq $PACKAGES >>"$BUILD/apt.log" 2>&1 ||
	{ tail -30 "$BUILD/apt.log" >&2; exit 1; }
for s in prometheus-alertmanager slurmrestd; do in_chroot systemctl disable "$s" >/dev/null 2>&1 || true; done
in_chroot apt-get clean
rm -f "$MNT/usr/sbin/policy-rc.d"
in_chroot dpkg-query -W -f '${Package} ${Version}\n' >"$BUILD/out/packages.txt"
for m in dev/pts dev proc sys ""; do umount "$MNT/$m"; done
cp "$BASE/vmlinuz" "$BASE/initrd.img" "$BUILD/out/"
rm -rf "$CACHE/$TAG"-* # the previous key's image
mv "$BUILD/out" "$OUT"
log "image built in $(($(date +%s) - T0)) s: $OUT"
echo "$OUT"
