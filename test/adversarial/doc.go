// SPDX-License-Identifier: Apache-2.0

// Package adversarial runs the jobscope binary against the faults a node
// meets: bad, huge, blocking and vanishing cgroup files; Slurm commands that
// print garbage, fail, hang or never close stdout; hostile HTTP clients;
// job churn; SIGTERM during a slow scrape; overlapping scrapes. Each case
// asserts its outcome and leaves no process behind (make test-adversarial,
// docs/reliability.md).
package adversarial
