// SPDX-License-Identifier: Apache-2.0

// Package js1 encodes and decodes job summaries in the JS1 form that
// jobstats keeps in a finished job's AdminComment in Slurm's accounting:
// "JS1:" + base64(gzip(JSON)). jobscope's own figures ride in the same
// object under the "jobscope" key, which jobstats' readers ignore.
//
// A comment is read as hostile input: an operator, a site script or another
// tool may have written anything there, and the summary of one job is shown
// to its user. Decode bounds every size on the way (comment, decompressed
// JSON, nesting, nodes, GPUs, strings) before anything is kept.
package js1
