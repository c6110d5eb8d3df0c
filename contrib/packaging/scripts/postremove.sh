#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# jobscope package: dpkg postrm and rpm %postun.
#   dpkg: remove | purge | upgrade | failed-upgrade | abort-* | disappear
#   rpm:  <number of jobscope packages left>: 0 erase, 1 or more upgrade
# A removal detaches the node unit's BPF programs (their pinned links). A
# purge (dpkg) or an erase (rpm, which has no purge) removes what jobscope
# left at run time and nothing else: the pinned BPF maps and links of the
# node unit (/sys/fs/bpf/jobscope), the prolog's job files (/run/jobscope), and the
# jobscope user and group. dpkg removes /etc/default/jobscope itself; rpm
# keeps an edited /etc/sysconfig/jobscope as .rpmsave.
set -e

case "$1" in
purge | 0) ;;
remove)
	[ ! -d /run/systemd/system ] || systemctl daemon-reload || true
	# The node unit's programs stay attached across its restarts (pinned
	# links); a removed jobscope must not leave them counting. The maps
	# stay until the purge. Kept when the other build took over.
	[ -e /usr/bin/jobscope ] || rm -rf /sys/fs/bpf/jobscope/links
	exit 0
	;;
*) exit 0 ;;
esac

[ ! -d /run/systemd/system ] || systemctl daemon-reload || true

# The other build of jobscope (jobscope-static or jobscope) took over: its
# user and maps are in use.
[ ! -e /usr/bin/jobscope ] || exit 0

rm -rf /sys/fs/bpf/jobscope /run/jobscope
if getent passwd jobscope >/dev/null; then
	userdel jobscope || echo "jobscope: could not remove the jobscope user" >&2
fi
if getent group jobscope >/dev/null; then
	groupdel jobscope || echo "jobscope: could not remove the jobscope group" >&2
fi
exit 0
