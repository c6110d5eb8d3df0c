// SPDX-License-Identifier: Apache-2.0

// Package ebpf is the ebpf collector: per-job CPU time per core, IO and
// network counters from the CO-RE programs of package bpf, which cmd loads.
package ebpf
