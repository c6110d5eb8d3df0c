// SPDX-License-Identifier: Apache-2.0

// Package cluster holds the controller-mode collectors: cluster jobs, nodes,
// fairshare, scheduler statistics and ended jobs, from Slurm commands run
// once per poll interval for every scrape (slurmcli.Cache).
package cluster
