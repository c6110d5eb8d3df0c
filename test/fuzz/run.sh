#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs every fuzz target of the module for FUZZTIME each (default 20s), one
# after the other. A crasher is written by go test to
# <package>/testdata/fuzz/<Target>/, where plain `go test` replays it from
# then on: commit it with the fix, and it is a regression test.
set -uo pipefail
cd "$(dirname "$0")/../.."
GO=${GO:-go}
FUZZTIME=${FUZZTIME:-20s}
failed=()
flakes=0

# fuzz_one PKG TARGET: go test -fuzz, once more when it failed with Go 1.26's
# coordinator race (golang/go#75804, fixed in Go 1.27): at the -fuzztime
# deadline a busy worker's cancelled context is reported as the bare failure
# "context deadline exceeded", and no input is written. A real crasher
# always writes its input under testdata/fuzz/<Target>/, so that case never
# gets a second run; a second race in a row fails the target.
fuzz_one() {
	local pkg=$1 target=$2 out corpus before
	corpus=$pkg/testdata/fuzz/$target
	before=$(ls "$corpus" 2>/dev/null | wc -l)
	out=$("$GO" test -run '^$' -fuzz "^${target}\$" -fuzztime "$FUZZTIME" "$pkg" 2>&1)
	local rc=$?
	printf '%s\n' "$out"
	[ $rc = 0 ] && return 0
	if [ "$(ls "$corpus" 2>/dev/null | wc -l)" = "$before" ] &&
		[[ $(grep -A1 -- "^--- FAIL: $target " <<<"$out") == *$'\n    context deadline exceeded' ]]; then
		flakes=$((flakes + 1))
		echo "== $pkg $target: 'context deadline exceeded' with no input written (golang/go#75804): once more"
		"$GO" test -run '^$' -fuzz "^${target}\$" -fuzztime "$FUZZTIME" "$pkg"
		return
	fi
	return $rc
}
n=0
start=$SECONDS
while IFS=: read -r file target; do
	pkg=./$(dirname "$file")
	n=$((n + 1))
	echo "== $pkg $target ($FUZZTIME)"
	if ! fuzz_one "$pkg" "$target"; then
		failed+=("$pkg $target")
	fi
done < <(git ls-files '*_test.go' | xargs grep -Ho '^func Fuzz[A-Za-z0-9_]*' | sed 's/:func /:/' | sort)
echo "fuzz: $n targets in $((SECONDS - start)) s ($flakes rerun after golang/go#75804)"
if [ ${#failed[@]} -gt 0 ]; then
	printf 'fuzz: FAILED %s\n' "${failed[@]}"
	git status --short --untracked-files=all -- ':(glob)**/testdata/fuzz/**'
	exit 1
fi
