#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# jobscope's gpu collector against a real NVIDIA GPU (issue 21). Runs as root
# on a GPU machine, from a bundle made by `make gpu-bundle` (binaries built on
# the development machine: jobscope with cgo, nvmldump, gpucheck), and writes
# everything into $OUT/results.tar.gz plus $OUT/gpu-report.md.
set -u
BUNDLE=${BUNDLE:-.gpurun}
OUT=${OUT:-/tmp/jobscope-gpu-out}
R=$(mktemp -d /tmp/jobscope-gpu.XXXXXX)
mkdir -p "$OUT"
{
	date -u
	uname -a
	grep PRETTY /etc/os-release
	ldd --version | head -1
	nvidia-smi
	nvidia-smi -L
	nvidia-smi --query-gpu=name,driver_version,vbios_version,mig.mode.current,mig.mode.pending,compute_mode,persistence_mode --format=csv
	mount | grep -E 'cgroup|bpf'
	for c in nvcc nv-hostengine dcgmi python3 curl; do printf '%s: %s\n' "$c" "$(command -v $c || echo absent)"; done
	ldconfig -p | grep -E 'nvidia-ml|dcgm|libcuda\.'
	nvcc --version | tail -2
} >"$R/facts.txt" 2>&1
nvidia-smi -q >"$R/nvidia-smi-q.txt" 2>&1
mountpoint -q /sys/fs/bpf || mount -t bpf bpf /sys/fs/bpf
nvcc -O2 -arch=sm_90 -o /tmp/gpuload "$BUNDLE/gpuload.cu" >"$R/nvcc.log" 2>&1 || echo "nvcc failed" >>"$R/facts.txt"
"$BUNDLE/nvmldump" -o "$R/nvml-dump.json" 2>"$R/nvmldump.log"
"$BUNDLE/gpucheck" -jobscope "$BUNDLE/jobscope" -load /tmp/gpuload -out "$R"
rc=$?
# The same dump under load, for the fixtures (GPM values away from zero).
(
	echo start
	sleep 1
	echo "busy 12"
	sleep 13
	echo exit
) | /tmp/gpuload >"$R/load-for-dump.log" 2>&1 &
sleep 4
"$BUNDLE/nvmldump" -o "$R/nvml-dump-load.json" 2>>"$R/nvmldump.log"
wait
if command -v nv-hostengine >/dev/null; then
	nv-hostengine -n --port 5555 -b 127.0.0.1 >"$R/hostengine.log" 2>&1 &
	he=$!
	sleep 3
	"$BUNDLE/jobscope" --web.listen-address=127.0.0.1:19904 --gpu.backend=dcgm --collector.ebpf=false \
		--slurm.node-metadata.squeue=false --log.level=debug >"$R/jobscope-dcgm.log" 2>&1 &
	js=$!
	"$BUNDLE/gpucheck" -dump 127.0.0.1:19904 >"$R/dcgm-series.txt" 2>&1
	kill $js $he 2>/dev/null
else
	echo "no nv-hostengine on this machine: the DCGM backend was not run" >"$R/dcgm-series.txt"
fi
cp "$R/gpu-report.md" "$OUT/" 2>/dev/null
tar -C "$R" -czf "$OUT/results.tar.gz" .
cat "$R/facts.txt" | head -40
exit $rc
