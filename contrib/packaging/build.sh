#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds jobscope's packages into $OUT (default dist/), for each architecture
# given (default: amd64 arm64), in two builds:
#   jobscope         cgo, with GPU support (NVML, DCGM); needs the glibc of
#                    the build machine or newer (the dependency says which)
#   jobscope-static  no cgo, so no GPU support; runs on any glibc
# each holding two binaries of the same build: /usr/bin/jobscope (the
# exporter) and /usr/bin/jobscope-report (the report `jobscope report` runs;
# the exporter links none of its charting code).
# each as jobscope_<version>_<arch>.deb and jobscope-<version>.<rpm arch>.rpm.
# nfpm comes from the Go module proxy (go run), pinned below. Cross-building
# with cgo needs a C cross compiler (Debian: gcc-aarch64-linux-gnu).
# Settings (environment): VERSION, REVISION (the Makefile's), GO, OUT, BUILD,
# VARIANTS (default "gpu static").
#   usage: build.sh [amd64] [arm64]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
GO=${GO:-go}
VERSION=${VERSION:-$(sh contrib/packaging/version.sh)}
REVISION=${REVISION:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}
OUT=${OUT:-$ROOT/dist}
BUILD=${BUILD:-$ROOT/build/packaging}
NFPM=("$GO" run github.com/goreleaser/nfpm/v2/cmd/nfpm@v2.45.2)
# File dates in the packages are the commit's, so a rebuild is identical.
SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}
export SOURCE_DATE_EPOCH
host=$($GO env GOHOSTARCH)
[ $# -gt 0 ] || set -- amd64 arm64

log() { printf '[package] %s\n' "$*" >&2; }

rpm_arch() {
	case $1 in
	amd64) echo x86_64 ;;
	arm64) echo aarch64 ;;
	*) echo "$1" ;;
	esac
}

# cross_cc names the C compiler for cgo builds of another architecture.
cross_cc() {
	[ "$1" != "$host" ] || {
		echo "${CC:-gcc}"
		return
	}
	local cc
	case $1 in
	amd64) cc=x86_64-linux-gnu-gcc ;;
	arm64) cc=aarch64-linux-gnu-gcc ;;
	*) cc=$1-linux-gnu-gcc ;;
	esac
	command -v "$cc" >/dev/null || {
		log "$cc not found: cgo (GPU support) for $1 needs it (Debian: apt-get install gcc-$(rpm_arch "$1")-linux-gnu);"
		log "or build only the other architectures: make package PKG_ARCHES=$host"
		exit 1
	}
	echo "$cc"
}

# glibc_needed prints the newest GLIBC_x.y symbol version the binary uses.
glibc_needed() {
	readelf -W -V "$1" | grep -o 'GLIBC_[0-9][0-9.]*' | sed 's/GLIBC_//' | sort -uV | tail -1
}

mkdir -p "$OUT"
for arch in "$@"; do
	for variant in ${VARIANTS:-gpu static}; do
		dir=$BUILD/$variant-$arch
		rm -rf "$dir"
		mkdir -p "$dir/doc"
		if [ $variant = gpu ]; then
			name=jobscope other=jobscope-static tags= cgo=1 cc=$(cross_cc "$arch")
		else
			name=jobscope-static other=jobscope tags=nogpu cgo=0 cc=
		fi
		for cmd in jobscope jobscope-report; do
			log "$name $VERSION $arch: go build ./cmd/$cmd"
			CGO_ENABLED=$cgo GOOS=linux GOARCH=$arch CC=$cc $GO build -tags "$tags" -trimpath \
				-ldflags "-s -w -X main.version=$VERSION -X main.revision=$REVISION" -o "$dir/$cmd" ./cmd/$cmd

			# Each man page comes from the flags of this build; for another
			# architecture, from the same build for this machine.
			manbin=$dir/$cmd
			if [ "$arch" != "$host" ]; then
				manbin=$dir/$cmd-$host
				CGO_ENABLED=$cgo $GO build -tags "$tags" -ldflags "-X main.version=$VERSION" -o "$manbin" ./cmd/$cmd
			fi
			"$manbin" --help-man | gzip -9n >"$dir/$cmd.1.gz"
			[ "$manbin" = "$dir/$cmd" ] || rm -f "$manbin"
		done

		# The copyright file (Debian's machine-readable format) and the
		# licence texts: jobscope's, its eBPF programs', every module's.
		GOARCH=$arch CGO_ENABLED=$cgo bash contrib/packaging/copyright.sh "$dir/doc" "$tags" "$VERSION" "$REVISION" \
			>"$dir/doc/copyright"
		install -m 0644 LICENSE "$dir/doc/LICENSE"
		install -m 0644 NOTICE "$dir/doc/NOTICE"
		install -m 0644 bpf/LICENSE.GPL-2.0 "$dir/doc/LICENSE.GPL-2.0"
		chmod -R u=rwX,go=rX "$dir/doc"

		if [ $variant = gpu ]; then
			glibc=$(glibc_needed "$dir/jobscope")
			export PKG_DEB_LIBC="libc6 (>= $glibc)" PKG_RPM_LIBC="libc.so.6(GLIBC_$glibc)(64bit)"
			export PKG_SUMMARY=""
			export PKG_BUILD_NOTE="This build has GPU support (NVML, DCGM) and needs glibc $glibc or newer; jobscope-static runs on older systems."
		else
			export PKG_DEB_LIBC="" PKG_RPM_LIBC=""
			export PKG_SUMMARY=" (static build, no GPU support)"
			export PKG_BUILD_NOTE="This static build (no cgo) has no GPU support (NVML, DCGM) and runs on any glibc; the jobscope package has GPU support."
		fi
		export PKG_NAME=$name PKG_OTHER=$other PKG_ARCH=$arch PKG_VERSION=$VERSION PKG_DIR=$dir
		deb=$OUT/${name}_${VERSION}_${arch}.deb
		rpm=$OUT/$name-$VERSION.$(rpm_arch "$arch").rpm
		"${NFPM[@]}" package -f contrib/packaging/nfpm.yaml -p deb -t "$deb" >/dev/null
		"${NFPM[@]}" package -f contrib/packaging/nfpm.yaml -p rpm -t "$rpm" >/dev/null
		log "$(du -h "$deb" | cut -f1) $deb"
		log "$(du -h "$rpm" | cut -f1) $rpm"
	done
done
