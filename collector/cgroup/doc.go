// SPDX-License-Identifier: Apache-2.0

// Package cgroup is the cgroup collector: each job's memory, CPU, throttling,
// pressure, block IO and pids from its job-level cgroup (v1 and v2).
package cgroup
