#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# jobscope GPU-to-job mapping: epilog half (see prolog.d/jobscope-gpu-mapping.sh).
#
# Removes the mapping files that still name this job. A file another job
# has written since is left alone. jobscope ignores files of jobs that are
# no longer on the node, so a missed epilog costs nothing but a stale file.
#
# Install: copy to /etc/slurm/epilog.d/ (mode 0755, owned by root), with
# Epilog=/etc/slurm/epilog.d/* in slurm.conf. Never fails (exit 0).

dir=${JOBSCOPE_GPU_MAPPING_DIR:-/run/jobscope/gpu-jobs}
job=${SLURM_JOB_ID:-}

case $job in
'' | *[!0-9]*) exit 0 ;;
esac
[ -d "$dir" ] || exit 0

# Every file, not only SLURM_JOB_GPUS: the epilog's environment may lack
# it, and a node has a handful of GPUs.
for f in "$dir"/* "$dir"/.*."$job"; do
	[ -f "$f" ] || continue
	case $f in
	"$dir"/.*."$job")
		rm -f "$f" # a temporary file of an interrupted prolog
		continue
		;;
	esac
	read -r owner <"$f" 2>/dev/null || continue
	if [ "$owner" = "$job" ]; then
		rm -f "$f"
	fi
done
exit 0
