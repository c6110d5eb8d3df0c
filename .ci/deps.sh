#!/usr/bin/env bash
# What the tests need from Debian: promtool (prometheus), chromium (the job
# report's HTML page is opened in a real headless browser), and for the
# eBPF tests and `make generate`: clang, llvm, bpftool, libbpf-dev, linux-perf.
set -euo pipefail
pkgs=(prometheus chromium clang llvm bpftool libbpf-dev linux-perf)
missing=()
for p in "${pkgs[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
