#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# jobscope package test: every .deb and .rpm that `make package` built is
# checked file by file, and the amd64 packages are installed, upgraded and
# purged on a clean Debian 12 (a debootstrap minbase tree): in a chroot with
# systemd installed but not running, the .deb with apt and the .rpm with
# Debian's rpm; then the .deb again with the tree booted in systemd-nspawn,
# where systemd runs; then, in a fresh tree with Debian's prometheus, the
# report epilog enabled as docs/report.md says writes a real job's report
# (test/package/report.sh). Prints one line per assertion and exits non-zero on
# any FAIL; the trees stay in the work directory after a failure.
#
# Root runs everything inside a private mount namespace (unshare), so the
# chroot's /proc and bpffs mounts vanish with the test whatever happens; it
# touches no host unit, user or /etc file.
#
# Settings (environment):
#   VERSION                the packages' version (default: contrib/packaging/version.sh)
#   JOBSCOPE_PKG_DIST      the packages (default: dist/, what `make package` wrote)
#   JOBSCOPE_PKG_WORK      work directory, keeps the debootstrap tarball between
#                          runs (default /tmp/jobscope-pkgtest)
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
export PATH=$PATH:/usr/local/go/bin
GO=${GO:-go}
VERSION=${VERSION:-$(sh contrib/packaging/version.sh)}
DIST=${JOBSCOPE_PKG_DIST:-$ROOT/dist}
WORK=${JOBSCOPE_PKG_WORK:-/tmp/jobscope-pkgtest}
ARCHES=(amd64 arm64)
T0=$(date +%s)

if [ "$(id -u)" = 0 ] && [ -z "${JOBSCOPE_PKG_NS:-}" ]; then
	export JOBSCOPE_PKG_NS=1
	exec unshare --mount --propagation private "$BASH" "$0" "$@"
fi

log() { printf '[pkgtest %3ds] %s\n' "$(($(date +%s) - T0))" "$*" >&2; }
FAILS=0 PASSES=0
pass() {
	PASSES=$((PASSES + 1))
	printf 'PASS  %s\n' "$1"
}
fail() {
	FAILS=$((FAILS + 1))
	printf 'FAIL  %s\n' "$1"
	[ -z "${2:-}" ] || printf '%s\n' "$2" | sed 's/^/      /' | head -40
}
check_eq() { # name want got
	if [ "$2" = "$3" ]; then pass "$1"; else fail "$1" "want: $2"$'\n'"got:  $3"; fi
}
check_same() { # name want-file got-file
	local d
	if d=$(diff -u "$2" "$3"); then pass "$1"; else fail "$1" "$d"; fi
}
check() { # name command...
	local name=$1 out
	shift
	if out=$("$@" 2>&1); then pass "$name"; else fail "$name" "$out"; fi
}

rpm_arch() { case $1 in amd64) echo x86_64 ;; arm64) echo aarch64 ;; *) echo "$1" ;; esac }
deb_file() { echo "$DIST/${1}_${VERSION}_$2.deb"; }    # name arch
rpm_file() { echo "$DIST/$1-$VERSION.$(rpm_arch "$2").rpm"; } # name arch
sha() { sha256sum <"$1" | cut -d' ' -f1; }

# System directories a .deb lists as parents; an .rpm does not own them.
SYSDIRS=(/etc /etc/default /usr /usr/bin /usr/lib /usr/lib/systemd /usr/lib/systemd/system
	/usr/share /usr/share/doc /usr/share/man /usr/share/man/man1)

# modules prints "path version dir" of each Go module compiled into a build.
modules() { # variant arch
	local tags= cgo=1
	[ "$1" = static ] && tags=nogpu cgo=0
	GOARCH=$2 CGO_ENABLED=$cgo $GO list -deps -tags "$tags" \
		-f '{{with .Module}}{{if .Version}}{{.Path}} {{.Version}} {{.Dir}}{{end}}{{end}}' ./cmd/jobscope ./cmd/jobscope-report | sort -u
}

# expected prints "mode path source" for every entry a package must hold
# (directories end in /). source is a repository file the entry must equal,
# or @ for entries checked otherwise (binary, man page, copyright, dirs).
expected() { # format variant arch
	local etc=/etc/default/jobscope
	[ "$1" = rpm ] && etc=/etc/sysconfig/jobscope
	if [ "$1" = deb ]; then # dpkg lists the parent directories too
		for d in "${SYSDIRS[@]}"; do echo "0755 $d/ @"; done
	fi
	cat <<-EOF
		0644 $etc contrib/packaging/jobscope.default
		0755 /etc/jobscope/ @
		0644 /etc/jobscope/report.yml contrib/packaging/etc/report.yml
		0644 /etc/jobscope/report-epilog.conf contrib/packaging/etc/report-epilog.conf
		0644 /etc/jobscope/notify.yml contrib/notify/notify.yml
		0640 /etc/jobscope/report-service.yml contrib/report-service.yml
		0755 /usr/bin/jobscope @
		0755 /usr/bin/jobscope-report @
		0644 /usr/lib/systemd/system/jobscope.service contrib/systemd/jobscope.service
		0644 /usr/lib/systemd/system/jobscope-controller.service contrib/systemd/jobscope-controller.service
		0644 /usr/lib/systemd/system/jobscope-notify.service contrib/systemd/jobscope-notify.service
		0644 /usr/lib/systemd/system/jobscope-report.service contrib/systemd/jobscope-report.service
		0644 /usr/lib/systemd/system/jobscope-summaries.service contrib/systemd/jobscope-summaries.service
		0644 /usr/lib/systemd/system/jobscope-summaries.timer contrib/systemd/jobscope-summaries.timer
		0755 /usr/share/jobscope/ @
		0755 /usr/share/jobscope/slurm/ @
		0755 /usr/share/jobscope/slurm/prolog.sh contrib/slurm/prolog.sh
		0755 /usr/share/jobscope/slurm/epilog.sh contrib/slurm/epilog.sh
		0755 /usr/share/jobscope/slurm/prolog.d/ @
		0755 /usr/share/jobscope/slurm/prolog.d/jobscope-gpu-mapping.sh contrib/slurm/prolog.d/jobscope-gpu-mapping.sh
		0755 /usr/share/jobscope/slurm/epilog.d/ @
		0755 /usr/share/jobscope/slurm/epilog.d/jobscope-gpu-mapping.sh contrib/slurm/epilog.d/jobscope-gpu-mapping.sh
		0755 /usr/share/jobscope/slurm/epilog.d/jobscope-report.sh contrib/slurm/epilog.d/jobscope-report.sh
		0755 /usr/share/jobscope/grafana/ @
		0644 /usr/share/jobscope/grafana/jobscope-dashboard.json contrib/grafana/jobscope-dashboard.json
		0755 /usr/share/jobscope/prometheus/ @
		0644 /usr/share/jobscope/prometheus/prometheus.yml contrib/prometheus/prometheus.yml
		0644 /usr/share/jobscope/prometheus/jobscope-recording-rules.yml contrib/prometheus/jobscope-recording-rules.yml
		0644 /usr/share/jobscope/prometheus/jobscope-alert-rules.yml contrib/prometheus/jobscope-alert-rules.yml
		0644 /usr/share/jobscope/prometheus/jobscope-usage-rules.yml contrib/prometheus/jobscope-usage-rules.yml
		0644 /usr/share/jobscope/prometheus/jobscope-summary-rules.yml contrib/prometheus/jobscope-summary-rules.yml
		0644 /usr/share/jobscope/prometheus/jobscope-job-alert-rules.yml contrib/prometheus/jobscope-job-alert-rules.yml
		0755 /usr/share/jobscope/alertmanager/ @
		0644 /usr/share/jobscope/alertmanager/alertmanager.yml contrib/alertmanager/alertmanager.yml
		0644 /usr/share/jobscope/prometheus/jobscope-jobstats-rules.yml contrib/prometheus/jobscope-jobstats-rules.yml
		0644 /usr/share/man/man1/jobscope.1.gz @
		0644 /usr/share/man/man1/jobscope-report.1.gz @
		0755 /usr/share/doc/jobscope/ @
		0644 /usr/share/doc/jobscope/copyright @
		0755 /usr/share/doc/jobscope/licenses/ @
		0755 /usr/share/doc/jobscope/licenses/go/ @
		0644 /usr/share/doc/jobscope/licenses/go/LICENSE $($GO env GOROOT)/LICENSE
	EOF
	cat <<-EOF
		0644 /usr/share/doc/jobscope/LICENSE LICENSE
		0644 /usr/share/doc/jobscope/LICENSE.GPL-2.0 bpf/LICENSE.GPL-2.0
		0644 /usr/share/doc/jobscope/NOTICE NOTICE
	EOF
	# Licence texts: one directory per Go module compiled into this build.
	modules "$2" "$3" | while read -r mod _ dir; do
			local p=/usr/share/doc/jobscope/licenses
			for part in ${mod//\// }; do
				p=$p/$part
				echo "0755 $p/ @"
			done
			for f in "$dir"/*; do
				[ -f "$f" ] || continue
				case $(basename "$f" | tr 'a-z' 'A-Z') in
				LICENSE* | LICENCE* | COPYING* | NOTICE*) echo "0644 $p/$(basename "$f") $f" ;;
				esac
			done
			# Texts a LICENSE points to (licenses.sh copies them too).
			if [ -d "$dir/licenses" ]; then
				echo "0755 $p/licenses/ @"
				for f in "$dir"/licenses/*.txt; do [ -f "$f" ] && echo "0644 $p/licenses/$(basename "$f") $f"; done
			fi
		done | awk '!seen[$0]++' # modules share parent directories
}

# listing prints "mode owner path digest" for every entry of a package.
perm2oct() {
	local p=${1:1} o=0 i
	for i in 0 1 2 3 4 5 6 7 8; do o=$((o << 1)) && [ "${p:i:1}" = - ] || o=$((o | 1)); done
	printf '%04o' "$o"
}
listing_deb() { # deb extracted-dir
	dpkg-deb -c "$1" | awk '{ print $1, $2, $6 }' | while read -r perm owner path; do
		path=/${path#./}
		path=${path%/}
		if [ "${perm:0:1}" = d ]; then
			echo "$(perm2oct "$perm") ${owner/\//:} $path/ -"
		else
			echo "$(perm2oct "$perm") ${owner/\//:} $path $(sha "$2$path")"
		fi
	done | sort -k3
}
listing_rpm() {
	rpm -qp --dump "$1" | awk '{ m = $5; dir = (substr(m, 1, length(m) - 4) == "04")
		print substr(m, length(m) - 3), $6 ":" $7, $1 (dir ? "/" : ""), (dir ? "-" : $4) }' | sort -k3
}

# version_line is what `jobscope --version` must print for a build.
version_line() { # variant arch
	local f="cgo, GPU support: NVML, DCGM"
	[ "$1" = static ] && f="static, no GPU support"
	echo "jobscope $VERSION (revision $(git rev-parse --short HEAD), linux/$2, $f)"
}

# run_bin runs a binary of any architecture this machine can emulate.
run_bin() { # arch binary args...
	local arch=$1
	shift
	if [ "$arch" = "$(dpkg --print-architecture)" ]; then
		"$@"
	elif [ "$arch" = arm64 ]; then
		command -v qemu-aarch64 >/dev/null || {
			echo "qemu-aarch64 not installed (apt-get install qemu-user)"
			return 1
		}
		qemu-aarch64 -L /usr/aarch64-linux-gnu "$@"
	else
		echo "cannot run $arch binaries here"
		return 1
	fi
}

# build_info_version serves the demo node with a packaged binary and prints
# the version label of its jobscope_build_info.
build_info_version() { # binary
	local port=$((20000 + RANDOM % 10000)) pid v= i
	"$1" --web.listen-address=127.0.0.1:$port --path.cgroupfs=testdata/demo/cgroup --path.procfs=testdata/demo/proc \
		--path.sysfs=testdata/demo/sys --slurm.node-metadata.squeue=false --collector.ebpf=false \
		--collector.gpu=false --collector.power=false --log.level=error 2>/dev/null &
	pid=$!
	for i in $(seq 50); do
		v=$(curl -sf "http://127.0.0.1:$port/metrics" | sed -n 's/^jobscope_build_info{.*version="\([^"]*\)".*/\1/p') && [ -n "$v" ] && break
		sleep 0.1
	done
	kill "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	echo "$v"
}

# scriptlets splits `rpm -qp --scripts` into DIR/<scriptlet name>, without
# the blank line rpm prints after each.
scriptlets() { # rpm dir
	rpm -qp --scripts "$1" | awk -v d="$2" '
		/^[a-z]+ scriptlet \(using \/bin\/sh\):$/ { f = d "/" $1; next }
		f { print > f }'
	for f in "$2"/*; do sed -i '${/^$/d}' "$f"; done
}

source "$ROOT/test/package/packages.sh"
if [ "$(id -u)" = 0 ]; then
	source "$ROOT/test/package/chroot.sh"
else
	log "SKIP the install tests: they need root (debootstrap, chroot)"
	FAILS=$((FAILS + 1))
fi

log "$PASSES passed, $FAILS failed"
[ "$FAILS" = 0 ] || exit 1
# The chroot's /proc and bpffs are still mounted in this namespace: rm
# --one-file-system would skip them and fail.
for m in "$WORK/root/sys/fs/bpf" "$WORK/root/proc" "$WORK/report/proc"; do
	if mountpoint -q "$m"; then umount -l "$m"; fi
done
rm -rf --one-file-system "$WORK/root" "$WORK/nspawn" "$WORK/report" "$WORK/build" "$WORK/next"
