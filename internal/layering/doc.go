// SPDX-License-Identifier: Apache-2.0

// Package layering holds the test that keeps jobscope's import graph one
// way: readers < job discovery < providers < collector framework <
// collectors < registry < command; the framework knows no hardware reader,
// and no collector imports another.
package layering
