# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# The VMs of `make vm-e2e`: one line each. Sourced by run.sh and image.sh.
# Fields: name, Debian suite, debootstrap script, what the VM adds.
#   A  bookworm (Debian 12): kernel 6.1, systemd 252, Slurm 22.05, no slurmdbd
#   B  trixie (Debian 13): kernel 6.12, systemd 257, Slurm 24.11 with slurmdbd
#   C  forky (Debian 14 to be): kernel 7.2, systemd 262, Slurm 26.05 with
#      slurmdbd and slurmctld's own metrics endpoint; debootstrap on Debian 12
#      has no forky script, sid's bootstraps it.

vm_suite() { case $1 in A) echo bookworm ;; B) echo trixie ;; C) echo forky ;; *) return 1 ;; esac; }
vm_script() { case $1 in A) echo bookworm ;; B) echo trixie ;; C) echo sid ;; *) return 1 ;; esac; }
vm_dbd() { case $1 in A) echo no ;; *) echo yes ;; esac; }

# Packages of every image (besides minbase). bpftool lists programs for the
# unit proof, capsh decodes its capabilities; prometheus is the real
# Prometheus that scrapes both modes.
VM_PACKAGES="systemd systemd-sysv dbus mount kmod iproute2 procps curl jq bpftool libcap2-bin
linux-image-amd64 initramfs-tools
munge slurmctld slurmd slurm-client prometheus"
VM_DBD_PACKAGES="slurmdbd mariadb-server"
