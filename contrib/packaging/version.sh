#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Prints jobscope's version, from git describe, in a form that dpkg, rpm and
# semver all order the same way; the Makefile puts it in the binary
# (--version, jobscope_build_info) and in the package names.
#   tag v1.2.3                    -> 1.2.3
#   5 commits after v1.2.3        -> 1.2.3+5.g<hash>
#   tag v1.3.0-rc1                -> 1.3.0~rc1   (~ sorts before 1.3.0)
#   no v* tag yet                 -> 0.0.0+<commits>.g<hash>
#   uncommitted changes           -> ... .dirty (or +dirty)
# dpkg reads a '-' as the start of the Debian revision and rpm refuses one,
# hence the rewriting.
set -eu
cd "$(dirname "$0")/../.."
if ! git rev-parse --git-dir >/dev/null 2>&1; then
	echo 0.0.0+unknown
	exit 0
fi
if d=$(git describe --tags --match 'v[0-9]*' --dirty 2>/dev/null); then
	dirty=
	case $d in *-dirty) dirty=dirty d=${d%-dirty} ;; esac
	meta=
	if expr "$d" : '.*-[0-9][0-9]*-g[0-9a-f]*$' >/dev/null; then
		meta=$(echo "$d" | sed 's/.*-\([0-9]*\)-g\([0-9a-f]*\)$/\1.g\2/')
		d=$(echo "$d" | sed 's/-[0-9]*-g[0-9a-f]*$//')
	fi
	base=$(echo "${d#v}" | tr - '~')
else
	dirty=$(git diff --quiet HEAD 2>/dev/null || echo dirty)
	meta=$(git rev-list --count HEAD).g$(git rev-parse --short HEAD)
	base=0.0.0
fi
meta=$(echo "$meta${meta:+${dirty:+.}}$dirty")
echo "$base${meta:++$meta}"
