#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Inside a test VM, for debugging with JOBSCOPE_VM_SHELL=1: Slurm, the job
# scripts and both jobscope units as e2e.sh sets them up, then idle until
# /tmp/done exists (touch it through the shell to power the VM off).
set -uo pipefail
. "$(dirname "$0")/slurm.sh"
. "$HERE/jobscope.sh"
VM_NODE_MEM=2600
write_slurm_conf
install_jobscope_hooks "$SRC"
start_slurm
setup_users
write_jobs
install_node_unit
install_controller_unit
log "ready"
until [ -e /tmp/done ]; do sleep 2; done
