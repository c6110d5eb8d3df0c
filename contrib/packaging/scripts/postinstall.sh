#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# jobscope package: dpkg postinst and rpm %post.
#   dpkg: configure <version before, empty on a first install>
#   rpm:  <number of jobscope packages installed after this step>: 1 first
#         install, 2 or more upgrade
# Creates the jobscope system user when missing. Where systemd runs, a first
# install enables and starts the node unit (never the controller unit) and
# an upgrade restarts the units that were running. Without a running systemd
# (a chroot building a node image, a container) it touches no unit: enable
# it there with `systemctl enable jobscope`.
set -e

upgrade=
case "$1" in
configure) [ -z "$2" ] || upgrade=1 ;;
[0-9]*) [ "$1" -lt 2 ] || upgrade=1 ;;
*) exit 0 ;; # dpkg abort-*: nothing was changed that needs undoing here
esac

if ! getent group jobscope >/dev/null; then
	groupadd --system jobscope
fi
if ! getent passwd jobscope >/dev/null; then
	useradd --system --gid jobscope --no-create-home --home-dir /nonexistent \
		--shell /usr/sbin/nologin --comment "jobscope Prometheus exporter" jobscope
fi

[ -d /run/systemd/system ] || exit 0
systemctl daemon-reload || true
if [ -n "$upgrade" ]; then
	systemctl try-restart jobscope.service jobscope-controller.service jobscope-notify.service || true
else
	systemctl enable jobscope.service || true
	# A node that cannot start it yet (no Slurm, no BTF) must still install.
	systemctl start jobscope.service ||
		echo "jobscope: the service did not start; see journalctl -u jobscope" >&2
fi
exit 0
