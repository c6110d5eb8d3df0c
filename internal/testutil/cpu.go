// SPDX-License-Identifier: Apache-2.0

package testutil

import "syscall"

// CPUTime is the user and system CPU time this process has used, in ns:
// a benchmark's cpu-ns/op, which other load on a shared machine disturbs
// far less than its wall-clock ns/op.
func CPUTime() int64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Utime.Nano() + ru.Stime.Nano()
}
