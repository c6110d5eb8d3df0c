// SPDX-License-Identifier: Apache-2.0

// Package layering holds the test that keeps jobscope's import graph one
// way: readers < job discovery < providers < collector framework <
// collectors < registry < command; the framework knows no hardware reader,
// no collector imports another; and the test that keeps go.mod's
// requirements those of the imports (tidy).
package layering
