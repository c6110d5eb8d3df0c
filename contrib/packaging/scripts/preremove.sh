#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# jobscope package: dpkg prerm and rpm %preun.
#   dpkg: remove | upgrade <new version> | deconfigure | failed-upgrade
#   rpm:  <number of jobscope packages left after this step>: 0 erase,
#         1 or more upgrade
# On removal it stops and disables both units; an upgrade leaves them
# running (the new package's postinstall restarts them).
set -e

case "$1" in
remove | 0) ;;
*) exit 0 ;;
esac

if [ -d /run/systemd/system ]; then
	systemctl stop jobscope.service jobscope-controller.service jobscope-notify.service jobscope-summaries.timer || true
fi
# Disabling works on the unit files alone, so a node image built in a
# chroot loses its enablement links too.
if command -v systemctl >/dev/null; then
	systemctl --no-reload disable jobscope.service jobscope-controller.service jobscope-notify.service jobscope-summaries.timer >/dev/null 2>&1 || true
fi
exit 0
