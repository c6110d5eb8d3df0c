#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# image.sh: print the directory of the site image (disk.img, vmlinuz,
# initrd.img, packages.txt), building it first on a cache miss: VM C's
# forky image (Slurm 26.05, kernel 7.2) plus what a whole site needs
# besides (test/vm/image-plus.sh): Open MPI and a compiler for the MPI job,
# Debian's Alertmanager, and slurmrestd for the controller's slurmrestd
# source (its RPC budget, guest/ctl.sh).
#
# Environment: JOBSCOPE_VM_CACHE (default /var/cache/jobscope-vm).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
exec "$HERE/../vm/image-plus.sh" C site openmpi-bin libopenmpi-dev gcc libc6-dev prometheus-alertmanager slurmrestd
