# SPDX-License-Identifier: Apache-2.0
# Sourced by test/package/run.sh (root, private mount namespace): the amd64
# packages on a clean Debian 12 chroot where systemd is installed but not
# running (as in a node image being built): install, upgrade with an edited
# config file, switch between the two builds, purge; then the .rpm with
# Debian's rpm in the same chroot.

HOST_ARCH=$(dpkg --print-architecture)
SUITE=bookworm
FS=$WORK/root
TARBALL=$WORK/$SUITE-minbase-systemd.tar

inroot() {
	chroot "$FS" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LC_ALL=C \
		DEBIAN_FRONTEND=noninteractive "$@" </dev/null
}

# snapshot lists every path of the chroot but the bookkeeping the package
# managers and shadow's backups keep for themselves, and the marker
# systemd-analyze leaves in /run.
snapshot() {
	(cd "$FS" && find . -xdev | sort) | grep -Ev '^\./(tmp/pkg|var/log|var/cache/(apt|debconf|ldconfig)|var/lib/(apt|dpkg|rpm))(/|$)' |
		grep -Ev '^\./(etc/(passwd|group|shadow|gshadow)-|run/systemd/systemd-units-load)$'
}

# leftovers lists files that still mention jobscope, bookkeeping aside.
leftovers() {
	(cd "$FS" && find . -xdev -type f -print0 | xargs -0 grep -l jobscope 2>/dev/null) |
		grep -Ev '^\./(tmp/pkg|var/log|var/cache/(apt|debconf)|var/lib/(apt|dpkg|rpm))/' |
		grep -Ev '^\./etc/(passwd|group|shadow|gshadow)-$'
}

mkdir -p "$WORK"
if [ ! -s "$TARBALL" ]; then
	mirror=$(awk '/^URIs:/ { print $2; exit }' /etc/apt/sources.list.d/debian.sources 2>/dev/null)
	[ -n "$mirror" ] || mirror=$(awk '$1 == "deb" { print $2; exit }' /etc/apt/sources.list 2>/dev/null)
	log "debootstrap $SUITE minbase + systemd from $mirror (cached in $TARBALL)"
	rm -rf --one-file-system "$WORK/bootstrap"
	if ! debootstrap --variant=minbase --include=systemd "$SUITE" "$WORK/bootstrap" "$mirror" >"$WORK/debootstrap.log" 2>&1; then
		tail -20 "$WORK/debootstrap.log" >&2
		fail "debootstrap $SUITE" "see $WORK/debootstrap.log"
		return
	fi
	tar -C "$WORK/bootstrap" -cf "$TARBALL.tmp" . && mv "$TARBALL.tmp" "$TARBALL"
	rm -rf --one-file-system "$WORK/bootstrap"
fi
rm -rf --one-file-system "$FS"
mkdir -p "$FS"
tar -C "$FS" -xf "$TARBALL"
mount -t proc proc "$FS/proc"
mkdir -p "$FS/sys/fs/bpf"
mount -t bpf bpf "$FS/sys/fs/bpf"
log "chroot ready: $FS"

# The next version, to upgrade to: same sources, a higher version string.
NEXT=$VERSION.1
log "building the $NEXT packages to upgrade to"
VERSION=$NEXT VARIANTS=gpu OUT=$WORK/next BUILD=$WORK/build bash contrib/packaging/build.sh "$HOST_ARCH" 2>&1 | tail -2 >&2
mkdir -p "$FS/tmp/pkg"
cp "$(deb_file jobscope "$HOST_ARCH")" "$(deb_file jobscope-static "$HOST_ARCH")" \
	"$(rpm_file jobscope "$HOST_ARCH")" "$WORK/next/"*"_$HOST_ARCH.deb" "$WORK/next/"*.rpm "$FS/tmp/pkg/"
deb=/tmp/pkg/$(basename "$(deb_file jobscope "$HOST_ARCH")")
static=/tmp/pkg/$(basename "$(deb_file jobscope-static "$HOST_ARCH")")
next=/tmp/pkg/jobscope_${NEXT}_$HOST_ARCH.deb
snapshot >"$WORK/before"

# --- install ------------------------------------------------------------------
check "deb: apt-get install ./jobscope_*.deb" inroot apt-get install -y --no-install-recommends "$deb"
check_eq "deb: installed version" "install ok installed $VERSION-1" "$(inroot dpkg-query -W -f '${Status} ${Version}' jobscope)"
IFS=: read -r _ _ uid gid _ home shell < <(inroot getent passwd jobscope)
check "deb: jobscope is a system user" test -n "$uid" -a "${uid:-1000}" -lt 1000
check_eq "deb: its group, home and shell" "jobscope /nonexistent /usr/sbin/nologin" \
	"$(inroot getent group "${gid:-x}" | cut -d: -f1) $home $shell"
for u in jobscope.service jobscope-controller.service jobscope-notify.service; do
	check "deb: $u installed" cmp "$FS/usr/lib/systemd/system/$u" "contrib/systemd/$u"
	check_eq "deb: $u not enabled (systemd not running)" disabled "$(inroot systemctl is-enabled "$u" 2>&1)"
	check_eq "deb: systemd-analyze verify $u" "" "$(inroot systemd-analyze verify "/usr/lib/systemd/system/$u" 2>&1)"
done
check_eq "deb: jobscope --version (as the jobscope user)" "$(version_line gpu "$HOST_ARCH")" \
	"$(chroot --userspec=jobscope:jobscope "$FS" /usr/bin/jobscope --version 2>&1)"
check "deb: /etc/default/jobscope is a conffile" grep -q '^ /etc/default/jobscope ' \
	<(inroot dpkg-query -W -f '${Conffiles}\n' jobscope)
check_same "deb: dpkg -L lists the package's files" <(expected deb gpu "$HOST_ARCH" | awk '{ sub("/$", "", $2); print $2 }' | sort) \
	<(inroot dpkg -L jobscope | grep -v '^/\.$' | sort)

# What jobscope leaves at run time: the unit's ExecStartPre makes the pin
# directory, the ebpf collector pins maps there, the prologs write job files.
# One command a line (the unit has two: make the directory, take over pins).
mapfile -t pre < <(sed -n 's/^ExecStartPre=+//p' "$FS/usr/lib/systemd/system/jobscope.service")
check "unit's ExecStartPre makes the pin directory" inroot ${pre[0]}
for cmd in "${pre[@]:1}"; do check "unit's ExecStartPre: ${cmd%% /*}..." inroot $cmd; done
check "a map pinned in /sys/fs/bpf/jobscope" bpftool map create "$FS/sys/fs/bpf/jobscope/job_counters" \
	type hash key 4 value 4 entries 1 name jobscope_test
check "packaged prologs write the job's files" inroot env SLURM_JOB_ID=7 SLURM_JOB_USER=alice SLURM_JOB_GPUS=0 \
	sh -c '/usr/share/jobscope/slurm/prolog.sh && /usr/share/jobscope/slurm/prolog.d/jobscope-gpu-mapping.sh &&
		test -s /run/jobscope/jobs/7 -a -e /run/jobscope/gpu-jobs/0'

# --- upgrade ------------------------------------------------------------------
sed -i 's/^ARGS=""/ARGS="--log.level=debug"/' "$FS/etc/default/jobscope"
cp "$FS/etc/default/jobscope" "$WORK/edited"
sed -i 's/^#ENABLE=yes/ENABLE=yes/' "$FS/etc/jobscope/report-epilog.conf"
sed -i 's|^#prometheus:|prometheus:\n  url: http://prometheus.example:9090|' "$FS/etc/jobscope/report.yml"
cp "$FS/etc/jobscope/report-epilog.conf" "$WORK/edited-epilog"
cp "$FS/etc/jobscope/report.yml" "$WORK/edited-report"
check "deb: upgrade to $NEXT" inroot apt-get install -y --no-install-recommends "$next"
check_eq "deb: upgraded version" "install ok installed $NEXT-1" "$(inroot dpkg-query -W -f '${Status} ${Version}' jobscope)"
check "deb: the edited /etc/default/jobscope is kept" cmp "$WORK/edited" "$FS/etc/default/jobscope"
check "deb: the edited /etc/jobscope/report-epilog.conf is kept" cmp "$WORK/edited-epilog" "$FS/etc/jobscope/report-epilog.conf"
check "deb: the edited /etc/jobscope/report.yml is kept" cmp "$WORK/edited-report" "$FS/etc/jobscope/report.yml"
check_eq "deb: no .dpkg-* copies of them" "" "$(ls "$FS/etc/default" "$FS/etc/jobscope" | grep dpkg-)"
check_eq "deb: jobscope --version after the upgrade" "$(version_line gpu "$HOST_ARCH" | sed "s/ $VERSION / $NEXT /")" \
	"$(inroot jobscope --version 2>&1)"
check_eq "deb: same user after the upgrade" "$uid" "$(inroot id -u jobscope)"
check "deb: the pinned maps survive the upgrade" test -e "$FS/sys/fs/bpf/jobscope/job_counters"

# --- switch builds, then purge ------------------------------------------------
check "deb: apt-get install ./jobscope-static_*.deb replaces jobscope" inroot apt-get install -y "$static"
check_eq "deb: jobscope-static --version" "$(version_line static "$HOST_ARCH")" "$(inroot jobscope --version 2>&1)"
check_eq "deb: user and pins kept across the switch" "$uid yes" \
	"$(inroot id -u jobscope) $(test -e "$FS/sys/fs/bpf/jobscope/job_counters" && echo yes)"
# The node unit leaves its programs attached across restarts (pinned links
# under links/); a removal must detach them and keep the maps for a
# reinstall. A pinned map stands in for a link (bpftool pins no link).
mkdir -p "$FS/sys/fs/bpf/jobscope/links"
check "a link pinned in /sys/fs/bpf/jobscope/links" bpftool map create "$FS/sys/fs/bpf/jobscope/links/sched_switch" \
	type hash key 4 value 4 entries 1 name jobscope_link
check "deb: apt-get remove jobscope-static" inroot apt-get remove -y jobscope-static
check_eq "deb: the removal detached the programs and kept the maps" "no yes" \
	"$(test -e "$FS/sys/fs/bpf/jobscope/links" && echo yes || echo no) $(test -e "$FS/sys/fs/bpf/jobscope/job_counters" && echo yes)"
check "deb: apt-get purge jobscope jobscope-static" inroot apt-get purge -y jobscope jobscope-static
check_eq "deb: no jobscope package left" "" "$(inroot dpkg-query -W -f '${Package} ${Status}\n' 'jobscope*' 2>/dev/null)"
check_eq "deb: user and group removed" "" "$(inroot getent passwd jobscope; inroot getent group jobscope)"
check_eq "deb: pinned maps and job files removed" "" "$(ls -d "$FS/sys/fs/bpf/jobscope" "$FS/run/jobscope" 2>/dev/null)"
check_same "deb: the purge leaves the file system as before the install" "$WORK/before" <(snapshot)
check_eq "deb: no file mentions jobscope any more" "" "$(leftovers)"

# --- the rpm, with Debian's rpm, in the same chroot ---------------------------
# rpm runs the scriptlets inside the chroot, with rpm's numeric arguments.
# --nodeps: Debian's rpm database knows no glibc.
rpm_in() { rpm --root="$FS" --dbpath=/var/lib/rpm --nodeps "$@" </dev/null; }
rpmf=/tmp/pkg/$(basename "$(rpm_file jobscope "$HOST_ARCH")")
rpm_next=/tmp/pkg/jobscope-$NEXT.$(rpm_arch "$HOST_ARCH").rpm
rpm --root="$FS" --dbpath=/var/lib/rpm --initdb
check "rpm: rpm -i" rpm_in -i "$FS$rpmf"
check_eq "rpm: user created" "jobscope" "$(inroot id -un jobscope 2>&1)"
check_eq "rpm: node unit not enabled (systemd not running)" disabled "$(inroot systemctl is-enabled jobscope.service 2>&1)"
check_eq "rpm: jobscope --version" "$(version_line gpu "$HOST_ARCH")" "$(inroot jobscope --version 2>&1)"
sed -i 's/^ARGS=""/ARGS="--log.level=debug"/' "$FS/etc/sysconfig/jobscope"
cp "$FS/etc/sysconfig/jobscope" "$WORK/edited"
sed -i 's/^#ENABLE=yes/ENABLE=yes/' "$FS/etc/jobscope/report-epilog.conf"
cp "$FS/etc/jobscope/report-epilog.conf" "$WORK/edited-epilog"
inroot install -d -o jobscope -g jobscope -m 0700 /sys/fs/bpf/jobscope
rpm_uid=$(inroot id -u jobscope)
check "rpm: rpm -U to $NEXT" rpm_in -U "$FS$rpm_next"
check "rpm: the edited /etc/sysconfig/jobscope is kept" cmp "$WORK/edited" "$FS/etc/sysconfig/jobscope"
check "rpm: the edited /etc/jobscope/report-epilog.conf is kept" cmp "$WORK/edited-epilog" "$FS/etc/jobscope/report-epilog.conf"
check_eq "rpm: no .rpmnew copies" "" "$(ls "$FS/etc/sysconfig" "$FS/etc/jobscope" | grep rpmnew)"
check_eq "rpm: version after the upgrade" "$NEXT" "$(rpm --root="$FS" --dbpath=/var/lib/rpm -q --qf '%{VERSION}' jobscope)"
check_eq "rpm: user kept by the upgrade" "$rpm_uid" "$(inroot id -u jobscope)"
check "rpm: pin directory kept by the upgrade" test -d "$FS/sys/fs/bpf/jobscope"
check "rpm: rpm -e jobscope" rpm_in -e jobscope
check_eq "rpm: user, group and pin directory removed" "" \
	"$(inroot getent passwd jobscope; inroot getent group jobscope; ls -d "$FS/sys/fs/bpf/jobscope" 2>/dev/null)"
# rpm keeps an edited config file as .rpmsave; that copy is the site's.
check "rpm: the edited config is saved as .rpmsave" cmp "$WORK/edited" "$FS/etc/sysconfig/jobscope.rpmsave"
check "rpm: the edited epilog conf is saved as .rpmsave" cmp "$WORK/edited-epilog" "$FS/etc/jobscope/report-epilog.conf.rpmsave"
# /etc/sysconfig belongs to the base system on RPM distributions; here rpm
# made it for the package. /etc/jobscope stays for the site's saved copy.
rm -f "$FS/etc/sysconfig/jobscope.rpmsave" "$FS/etc/jobscope/report-epilog.conf.rpmsave"
rmdir "$FS/etc/sysconfig" "$FS/etc/jobscope" 2>/dev/null
check_same "rpm: the erase leaves the file system as before the install" "$WORK/before" <(snapshot)
check_eq "rpm: no file mentions jobscope any more" "" "$(leftovers)"
source "$ROOT/test/package/nspawn.sh"
source "$ROOT/test/package/report.sh"
