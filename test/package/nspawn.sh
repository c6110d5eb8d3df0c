# SPDX-License-Identifier: Apache-2.0
# Sourced by test/package/chroot.sh: the .deb where systemd runs. The same
# Debian 12 tree boots in systemd-nspawn (private network, its own /run, a
# bpffs of its own), and a oneshot unit inside installs, edits the flags,
# upgrades, removes and purges, writing "name<TAB>want<TAB>got" lines that
# become this test's assertions.

BOX=$WORK/nspawn
if ! command -v systemd-nspawn >/dev/null; then
	fail "systemd: systemd-nspawn installed" "apt-get install systemd-container (make package-test does as root)"
	return
fi
rm -rf --one-file-system "$BOX"
mkdir -p "$BOX"
tar -C "$BOX" -xf "$TARBALL"
mkdir -p "$BOX/var/tmp/pkg" "$WORK/bpffs-box"
cp "$(deb_file jobscope "$HOST_ARCH")" "$WORK/next/$(basename "$next")" "$BOX/var/tmp/pkg/"
# /tmp is a fresh tmpfs inside the booted container: the files live in /var/tmp.
{
	printf '#!/bin/bash\nDEB=/var/tmp/pkg/%q NEXT_DEB=/var/tmp/pkg/%q VERSION=%q NEXT=%q\n' \
		"$(basename "$deb")" "$(basename "$next")" "$VERSION" "$NEXT"
	cat <<'EOF'
out=/var/tmp/pkg/results
: >$out
exec >/var/tmp/pkg/log 2>&1 </dev/null
export DEBIAN_FRONTEND=noninteractive
res() { printf '%s\t%s\t%s\n' "$1" "$2" "$3" >>$out; }
active() { # unit: waits up to 10 s for it to run, then 2 s to see it stay up
	for _ in $(seq 50); do [ "$(systemctl is-active "$1")" = active ] && break; sleep 0.2; done
	local pid
	pid=$(systemctl show -p MainPID --value "$1")
	sleep 2
	if [ "$(systemctl is-active "$1") $(systemctl show -p MainPID --value "$1")" = "active $pid" ]; then
		echo active
	else
		echo "$(systemctl is-active "$1"), $(systemctl show -p NRestarts --value "$1") restarts"
	fi
}
build_info() { # port
	exec 3<>/dev/tcp/127.0.0.1/$1 || return
	printf 'GET /metrics HTTP/1.0\r\n\r\n' >&3
	sed -n 's/^jobscope_build_info{.*version="\([^"]*\)".*/\1/p' <&3
	exec 3<&-
}
cmdline() { tr '\0' ' ' <"/proc/$(systemctl show -p MainPID --value "$1")/cmdline"; }

apt-get install -y "$DEB"
res "apt-get install" 0 $?
res "node unit enabled" enabled "$(systemctl is-enabled jobscope.service)"
res "controller unit not enabled" disabled "$(systemctl is-enabled jobscope-controller.service)"
res "node unit started" active "$(active jobscope.service)"
res "its ExecStartPre made the pin directory" "jobscope 700" "$(stat -c '%U %a' /sys/fs/bpf/jobscope)"
res "running service: jobscope_build_info version" "$VERSION" "$(build_info 10817)"
res "controller unit starts under its hardening" active "$(systemctl start jobscope-controller.service; active jobscope-controller.service)"
journalctl -u jobscope-controller --no-pager
pid=$(systemctl show -p MainPID --value jobscope.service)

sed -i -e 's|^ARGS=""|ARGS="--web.listen-address=127.0.0.1:10999 --log.level=debug"|' \
	-e 's|^CONTROLLER_ARGS=""|CONTROLLER_ARGS="--log.level=debug"|' /etc/default/jobscope
apt-get install -y "$NEXT_DEB"
res "upgrade" 0 $?
res "upgrade restarted the node unit" "active new" \
	"$(active jobscope.service) $([ "$(systemctl show -p MainPID --value jobscope.service)" != "$pid" ] && echo new)"
res "ARGS in /etc/default/jobscope reach jobscope" yes \
	"$(cmdline jobscope.service | grep -q -- '--bpf.pin-path=/sys/fs/bpf/jobscope --web.listen-address=127.0.0.1:10999 --log.level=debug ' && echo yes)"
res "CONTROLLER_ARGS reach the controller" "active yes" "$(active jobscope-controller.service) $(cmdline \
	jobscope-controller.service | grep -q -- '--slurm.poll-interval=30s --log.level=debug ' && echo yes)"
res "upgraded service: jobscope_build_info version" "$NEXT" "$(build_info 10999)"
res "node unit still enabled" enabled "$(systemctl is-enabled jobscope.service)"
pid=$(systemctl show -p MainPID --value jobscope.service)

apt-get remove -y jobscope
res "apt-get remove" 0 $?
res "remove stopped jobscope" "" "$(ls -d /proc/"$pid" 2>/dev/null)"
res "remove disabled the unit" "" "$(ls /etc/systemd/system/*.wants | grep -x 'jobscope.*\.service' | grep -v pkgtest)"
apt-get purge -y jobscope
res "apt-get purge" 0 $?
res "purge removed user, pins and job files" "" "$(getent passwd jobscope; ls -d /sys/fs/bpf/jobscope /run/jobscope 2>/dev/null)"
EOF
} >"$BOX/var/tmp/pkg/inside.sh"
chmod 0755 "$BOX/var/tmp/pkg/inside.sh"
cat >"$BOX/etc/systemd/system/jobscope-pkgtest.service" <<'EOF'
[Unit]
After=multi-user.target
SuccessAction=poweroff
FailureAction=poweroff
[Service]
Type=oneshot
ExecStart=/var/tmp/pkg/inside.sh
[Install]
WantedBy=multi-user.target
EOF
mkdir -p "$BOX/etc/systemd/system/multi-user.target.wants"
ln -s /etc/systemd/system/jobscope-pkgtest.service "$BOX/etc/systemd/system/multi-user.target.wants/"

# nspawn keeps state under /run/systemd: give it a /run of its own. The
# container may grant the unit's capabilities only from its own set.
log "booting the tree in systemd-nspawn"
unshare --mount --propagation private sh -c '
	mount -t tmpfs tmpfs /run && mount -t bpf bpf "$1/bpffs-box" &&
	exec timeout 180 systemd-nspawn -q -D "$1/nspawn" --boot --register=no --keep-unit --private-network \
		--link-journal=no --resolv-conf=off --timezone=off --capability=CAP_BPF,CAP_PERFMON \
		--bind="$1/bpffs-box:/sys/fs/bpf"' sh "$WORK" >"$WORK/nspawn.log" 2>&1
results=$BOX/var/tmp/pkg/results
check "systemd: the container ran the test (see $WORK/nspawn.log)" test -s "$results"
[ ! -f "$results" ] || while IFS=$'\t' read -r name want got; do
	check_eq "systemd: $name" "$want" "$got"
done <"$results"
[ "$FAILS" = 0 ] || log "inside the container: $BOX/var/tmp/pkg/log"
