// SPDX-License-Identifier: Apache-2.0

// Package report implements `jobscope report`: it finds one job's series in
// Prometheus (and, where allowed, its sacct record), and writes a summary of
// what the job used as text, JSON or a self-contained HTML page, or a
// usage table over many jobs. docs/report.md describes the output.
package report
