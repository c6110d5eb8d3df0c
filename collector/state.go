// SPDX-License-Identifier: Apache-2.0

package collector

import "github.com/jobscope/jobscope/collector/provide"

// The per-job state between scrapes lives with the providers, which keep
// some (a job's cpuset, the GPU references of its environment); the
// collectors keep using it under these names.

// StateGrace is provide.StateGrace.
const StateGrace = provide.StateGrace

// State is provide.State.
type State[T any] = provide.State[T]

// Entry is provide.Entry.
type Entry[T any] = provide.Entry[T]

// NewState is provide.NewState.
func NewState[T any](newValue func() *T) *State[T] { return provide.NewState(newValue) }
