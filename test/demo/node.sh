#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# `make demo`: serves the demo node. test/demo/livenode copies testdata/demo
# to ROOT and keeps its counters moving (CPU time, RAPL), so per-job energy
# is attributed as on a real node; jobscope reads ROOT like any node.
#   test/demo/node.sh ROOT JOBSCOPE [FLAGS...]
set -euo pipefail
root=$1
shift
"${GO:-go}" build -o bin/livenode ./test/demo/livenode
bin/livenode -dir "$root" &
live=$!
trap 'kill $live 2>/dev/null; wait $live 2>/dev/null || true' EXIT
for _ in $(seq 100); do
	[ -e "$root/.ready" ] && break
	kill -0 $live 2>/dev/null || exit 1
	sleep 0.1
done
[ -e "$root/.ready" ] || { echo "demo: the live node did not start within 10 s" >&2; exit 1; }
"$@"
