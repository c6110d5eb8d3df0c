#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# What the tests need from Debian: promtool (prometheus), chromium (the job
# report's HTML page is opened in a real headless browser), and for the eBPF
# tests and `make generate`: clang, llvm, bpftool, libbpf-dev, linux-perf;
# groff-base checks the man page. `make package`: the arm64 C cross compiler
# (cgo, so GPU support) and binutils; `make package-test`: Debian's rpm,
# debootstrap, qemu-user (runs the arm64 binaries), systemd-container.
set -euo pipefail
pkgs=(prometheus chromium clang llvm bpftool libbpf-dev linux-perf groff-base
	binutils gcc-aarch64-linux-gnu libc6-dev-arm64-cross rpm debootstrap qemu-user curl systemd-container)
missing=()
for p in "${pkgs[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
