#!/usr/bin/env bash
# Runs every fuzz target of the module for FUZZTIME each (default 20s), one
# after the other. A crasher is written by go test to
# <package>/testdata/fuzz/<Target>/, where plain `go test` replays it from
# then on: commit it with the fix, and it is a regression test.
set -uo pipefail
cd "$(dirname "$0")/../.."
GO=${GO:-go}
FUZZTIME=${FUZZTIME:-20s}
failed=()
n=0
start=$SECONDS
while IFS=: read -r file target; do
	pkg=./$(dirname "$file")
	n=$((n + 1))
	echo "== $pkg $target ($FUZZTIME)"
	if ! "$GO" test -run '^$' -fuzz "^${target}\$" -fuzztime "$FUZZTIME" "$pkg"; then
		failed+=("$pkg $target")
	fi
done < <(git ls-files '*_test.go' | xargs grep -Ho '^func Fuzz[A-Za-z0-9_]*' | sed 's/:func /:/' | sort)
echo "fuzz: $n targets in $((SECONDS - start)) s"
if [ ${#failed[@]} -gt 0 ]; then
	printf 'fuzz: FAILED %s\n' "${failed[@]}"
	git status --short --untracked-files=all -- ':(glob)**/testdata/fuzz/**'
	exit 1
fi
