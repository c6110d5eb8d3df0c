#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# jobscope GPU-to-job mapping: prolog half.
#
# Writes one file per GPU of the job into the mapping directory, named by
# the GPU's index (as in SLURM_JOB_GPUS) and holding the job id: the
# format of dcgm-exporter's HPC job mapping, read by jobscope with
# --gpu.job-mapping-dir. This is the most trusted of jobscope's mapping
# methods: it holds for GPUs the job runs nothing on, and for processes
# that carry no Slurm environment (pam_slurm_adopt, containers).
#
# Install (slurm.conf on the compute nodes):
#   Prolog=/etc/slurm/prolog.d/*
#   Epilog=/etc/slurm/epilog.d/*
#   PrologFlags=Alloc        # run at allocation, so idle GPUs are mapped too
# and copy this file to /etc/slurm/prolog.d/ (mode 0755, owned by root).
#
# Settings (environment of slurmd, or edit here):
#   JOBSCOPE_GPU_MAPPING_DIR  default /run/jobscope/gpu-jobs (tmpfs: a
#                             reboot leaves no stale files)
#
# A failing prolog drains the node, so this script never fails: anything
# unexpected is skipped and it exits 0.

dir=${JOBSCOPE_GPU_MAPPING_DIR:-/run/jobscope/gpu-jobs}
job=${SLURM_JOB_ID:-}
gpus=${SLURM_JOB_GPUS:-}

case $job in
'' | *[!0-9]*) exit 0 ;; # not a job, or not a job id we can trust
esac
[ -n "$gpus" ] || exit 0

umask 022
mkdir -p "$dir" 2>/dev/null || exit 0

# write NAME: write the job id to $dir/NAME through a temporary file, so
# jobscope never reads a half-written file.
write() {
	tmp="$dir/.$1.$job"
	if printf '%s\n' "$job" >"$tmp" 2>/dev/null; then
		mv -f "$tmp" "$dir/$1" 2>/dev/null || rm -f "$tmp"
	fi
}

old_ifs=$IFS
IFS=,
for g in $gpus; do
	case $g in
	*[!0-9-]* | '' | -* | *-)
		# A GPU or MIG UUID is written as is; anything else that could be
		# a path (slashes, dots) is refused.
		case $g in
		GPU-* | MIG-*)
			case $g in *[!0-9A-Za-z-]*) continue ;; esac
			write "$g"
			;;
		esac
		;;
	*-*)
		# A range such as 0-3.
		lo=${g%-*}
		hi=${g#*-}
		i=$lo
		while [ "$i" -le "$hi" ] 2>/dev/null && [ "$i" -lt 1024 ]; do
			write "$i"
			i=$((i + 1))
		done
		;;
	*)
		write "$g"
		;;
	esac
done
IFS=$old_ifs
exit 0
