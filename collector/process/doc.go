// SPDX-License-Identifier: Apache-2.0

// Package process is the process collector: each job's processes, threads,
// open files, context switches and CPU per executable, from procfs.
package process
