// SPDX-License-Identifier: Apache-2.0

// Package discovery finds the Slurm jobs of this node in its cgroup
// hierarchies (job_<id> and Slurm 26.05's SLUID directories, v1 and v2)
// and their metadata (the prolog's props files, a job process's
// environment, a background squeue), once per scrape, for the collectors.
package discovery
