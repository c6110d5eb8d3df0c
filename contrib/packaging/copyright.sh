#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Prints /usr/share/doc/jobscope/copyright for one build, in Debian's
# machine-readable format (copyright-format 1.0, licences named by their
# SPDX identifiers): jobscope itself (Apache-2.0), its eBPF programs
# (GPL-2.0-only, as they declare to the kernel), the data and headers
# compiled in, and every Go module of the build with the licence
# licenses.sh found; licenses.sh also copies their texts into DOC/licenses/.
#   usage: copyright.sh DOC build-tags version revision
set -euo pipefail
doc=$1 tags=$2 version=$3 revision=$4
cd "$(dirname "$0")/../.."
GO=${GO:-go}
lic=/usr/share/doc/jobscope/licenses

# dep5 turns licenses.sh's "A+B+A" into DEP-5's "A and B".
dep5() { tr '+' '\n' <<<"$1" | awk '!seen[$0]++' | paste -sd'\n' | sed ':a;N;$!ba;s/\n/ and /g'; }

# holders prints up to three copyright lines of a module's licence texts
# ("Copyright (c) ...", "Copyright 2014 ...", "Copyright ©..."), not the
# templates of a licence's appendix.
holders() { # dir
	grep -rhiE '^[[:space:]]*copyright[[:space:]]+(\(c\)|©|[0-9])' "$1" 2>/dev/null |
		grep -v '\[yyyy\]' | sed 's/^[[:space:]]*copyright[[:space:]]*//I; s/[[:space:]]*$//' | awk '!seen[$0]++ && n++ < 3'
}

modules=$(bash contrib/packaging/licenses.sh "$doc" "$tags")

cat <<EOF
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: jobscope
Upstream-Contact: https://github.com/jobscope/jobscope/issues
Source: https://github.com/jobscope/jobscope
Comment: jobscope $version (revision $revision). The binaries (jobscope,
 jobscope-report) hold jobscope's Go code, its eBPF programs (jobscope only),
 the data below, and the Go runtime and modules
 listed as vendor/<module> (the layout of go mod vendor); their licence texts
 and NOTICE files are in $lic/<module>/.

Files: *
Copyright: 2026 jobscope developers
License: Apache-2.0

Files: bpf/*.bpf.c bpf/*.h bpf/bench/*.bpf.c bpf/*_bpfel.o bpf/*_bpfel_test.o
Copyright: 2026 jobscope developers
License: GPL-2.0-only
Comment: The eBPF programs the binary loads into the kernel, built by bpf2go;
 they declare "GPL" to the kernel. They use the kernel's types
 (headers/vmlinux.h, from the kernel's BTF).

Files: /usr/include/bpf/*
Copyright: libbpf authors
License: LGPL-2.1-only or BSD-2-Clause
Comment: libbpf's headers (Debian's libbpf-dev), compiled into the eBPF
 programs; jobscope takes them under BSD-2-Clause.

Files: power/emissions_factors.csv
Copyright: Our World in Data (from Ember's and the Energy Institute's data)
License: CC-BY-4.0
Comment: Carbon intensity of electricity generation by country, embedded in
 the binary (docs/energy.md).
EOF

used="Apache-2.0 GPL-2.0-only LGPL-2.1-only BSD-2-Clause CC-BY-4.0"
while read -r mod ver kinds; do
	name=vendor/$mod
	[ "$mod" = go ] && name=go-runtime
	echo
	echo "Files: $name/*"
	h=$(holders "$doc/licenses/$mod" || true) # none: grep finds nothing
	[ -n "$h" ] || h="the authors of $mod (see its licence texts)"
	printf 'Copyright: %s\n' "$(sed '2,$s/^/ /' <<<"$h")"
	echo "License: $(dep5 "$kinds")"
	if [ "$mod" = go ]; then
		echo "Comment: The Go runtime and standard library, $ver; texts in $lic/go/."
	else
		echo "Comment: Go module $mod $ver; texts in $lic/$mod/."
	fi
	used="$used ${kinds//+/ }"
done <<<"$modules"

text() { # licence: where its text is
	case $1 in
	Apache-2.0) echo "/usr/share/doc/jobscope/LICENSE (on Debian also /usr/share/common-licenses/Apache-2.0)" ;;
	GPL-2.0-only) echo "/usr/share/doc/jobscope/LICENSE.GPL-2.0 (on Debian also /usr/share/common-licenses/GPL-2)" ;;
	LGPL-2.1-only) echo "https://spdx.org/licenses/LGPL-2.1-only.html (on Debian also /usr/share/common-licenses/LGPL-2.1)" ;;
	BSD-2-Clause) echo "https://spdx.org/licenses/BSD-2-Clause.html, with libbpf's copyright holders" ;;
	CC-BY-4.0) echo "https://creativecommons.org/licenses/by/4.0/legalcode" ;;
	*) echo "the licence files of the modules above that name it, in $lic/<module>/" ;;
	esac
}
for l in $(tr ' ' '\n' <<<"$used" | awk 'NF && !seen[$0]++'); do
	printf '\nLicense: %s\n The full text is in %s.\n' "$l" "$(text "$l")"
done
