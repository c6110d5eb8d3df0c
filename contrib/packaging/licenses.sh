#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Copies the licence texts of everything compiled into jobscope and
# jobscope-report (the Go modules `go list -deps` names for this
# GOOS/GOARCH/CGO_ENABLED and the given tags, and Go's own runtime and standard library) into OUT/licenses/,
# and prints one "module version licence" line per module.
# It fails on a module without a licence file, or with a licence it does not
# recognise as permissive: such a dependency needs a person's review first.
#   usage: licenses.sh OUT [build tags]
set -euo pipefail
out=$1
tags=${2:-}
cd "$(dirname "$0")/../.."
GO=${GO:-go}

# classify names a licence text; empty when it is not one this project has
# accepted (Apache-2.0, MIT, BSD, ISC, CC-BY-4.0, FreeType, OFL-1.1).
classify() {
	local f=$1 k=()
	if grep -q 'Apache License' "$f" && grep -q 'Version 2.0' "$f"; then k+=(Apache-2.0); fi
	# The SIL Open Font License (the Liberation fonts the job report's
	# charts embed) also says "Permission is hereby granted, free of
	# charge": it is not MIT.
	if grep -q 'SIL OPEN FONT LICENSE Version 1.1' "$f"; then
		k+=(OFL-1.1)
	elif grep -q 'Permission is hereby granted, free of charge' "$f"; then k+=(MIT); fi
	if grep -q 'Redistribution and use in source and binary forms' "$f"; then
		if grep -q 'Neither the name' "$f"; then k+=(BSD-3-Clause); else k+=(BSD-2-Clause); fi
	fi
	if grep -q 'Permission to use, copy, modify, and/or distribute' "$f"; then k+=(ISC); fi
	# gonum/plot's backends (the job report's charts): ajstarks/svgo is
	# CC-BY-4.0 (attribution: the text ships in the package's doc), and
	# golang/freetype is FreeType License or GPL at the user's choice:
	# jobscope takes the FreeType License (BSD-style, credit in the doc).
	if grep -q 'Creative Commons Attribution 4.0 International' "$f"; then k+=(CC-BY-4.0); fi
	if grep -q 'The FreeType License' "$f" && grep -q 'choice of exactly one' "$f"; then k+=(FTL); fi
	(IFS=+ && echo "${k[*]}")
}

rm -rf "$out/licenses"
mkdir -p "$out/licenses/go"
cp "$($GO env GOROOT)/LICENSE" "$out/licenses/go/LICENSE"
echo "go $($GO env GOVERSION) $(classify "$out/licenses/go/LICENSE")"

$GO list -deps -tags "$tags" -f '{{with .Module}}{{if .Version}}{{.Path}} {{.Version}} {{.Dir}}{{end}}{{end}}' ./cmd/jobscope ./cmd/jobscope-report |
	sort -u | while read -r mod ver dir; do
	kinds=()
	for f in "$dir"/*; do
		[ -f "$f" ] || continue # freetype keeps its licence texts in a licenses/ directory too
		base=$(basename "$f")
		case $(echo "$base" | tr 'a-z' 'A-Z') in
		LICENSE* | LICENCE* | COPYING* | NOTICE*) ;;
		*) continue ;;
		esac
		mkdir -p "$out/licenses/$mod"
		cp "$f" "$out/licenses/$mod/$base"
		chmod 0644 "$out/licenses/$mod/$base"
		case $base in NOTICE* | notice*) continue ;; esac
		kind=$(classify "$f")
		[ -n "$kind" ] || {
			echo "licenses.sh: $mod $ver: $base is not a licence this project has accepted; review it" >&2
			exit 1
		}
		kinds+=("$kind")
	done
	# Texts a LICENSE only points to (freetype: licenses/ftl.txt) ship too.
	if [ -d "$dir/licenses" ]; then
		mkdir -p "$out/licenses/$mod/licenses"
		cp "$dir"/licenses/*.txt "$out/licenses/$mod/licenses/" 2>/dev/null || true
		chmod -R u+w,a+r "$out/licenses/$mod/licenses"
	fi
	[ ${#kinds[@]} -gt 0 ] || {
		echo "licenses.sh: $mod $ver has no licence file in $dir" >&2
		exit 1
	}
	(IFS=+ && echo "$mod $ver ${kinds[*]}")
done
