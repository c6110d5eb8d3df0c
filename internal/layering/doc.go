// SPDX-License-Identifier: Apache-2.0

// Package layering holds the test that keeps jobscope's import graph one
// way: job discovery and hardware readers below the collectors, the
// collectors below their registry, the registry below the command; and the
// test that keeps go.mod's requirements those of the imports (tidy).
package layering
