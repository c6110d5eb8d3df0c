// SPDX-License-Identifier: Apache-2.0

package provide

import (
	"errors"
	"fmt"
)

// Set is the providers jobscope has, each started at most once.
type Set struct {
	all     []Provider
	started map[string]*started
}

type started struct {
	p   Provider
	err error
}

// NewSet builds a set over ps (registry order: a provider may use those
// before it from its Start).
func NewSet(ps ...Provider) *Set {
	return &Set{all: ps, started: map[string]*started{}}
}

// Providers lists the set's providers, in registry order.
func (s *Set) Providers() []Provider { return s.all }

// Start starts the named providers, in registry order, each once. A
// provider's failure is kept for the collectors that need it; a name no
// provider has is an error of the registry (a collector needs a provider
// that is not listed).
func (s *Set) Start(env *Env, names []string) error {
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	env.Set = s
	for _, p := range s.all {
		if !want[p.Name()] {
			continue
		}
		delete(want, p.Name())
		if s.started[p.Name()] == nil {
			s.started[p.Name()] = &started{p: p, err: p.Start(env)}
		}
	}
	for n := range want {
		return fmt.Errorf("no provider %q is registered", n)
	}
	return nil
}

// Close closes the started providers, the last started first.
func (s *Set) Close() error {
	if s == nil {
		return nil
	}
	var errs []error
	for i := len(s.all) - 1; i >= 0; i-- {
		st := s.started[s.all[i].Name()]
		if st == nil || st.err != nil {
			continue
		}
		delete(s.started, s.all[i].Name())
		if err := st.p.Close(); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", st.p.Name(), err))
		}
	}
	return errors.Join(errs...)
}

// Need returns the started provider called name, or why it cannot serve:
// its Start failed (that error), or it was not started (the collector's
// Factory does not list it in Needs).
func Need[T Provider](s *Set, name string) (T, error) {
	var zero T
	var st *started
	if s != nil {
		st = s.started[name]
	}
	switch {
	case st == nil:
		return zero, fmt.Errorf("provider %q not started (not in the collector's Needs)", name)
	case st.err != nil:
		return zero, st.err
	}
	p, ok := st.p.(T)
	if !ok {
		return zero, fmt.Errorf("provider %q is a %T", name, st.p)
	}
	return p, nil
}

// Loaded returns the provider called name when another collector's need
// started it and it works: for a collector that changes what it reads when
// a provider is there (the cgroup collector leaves per-core CPU to the eBPF
// programs) without needing it.
func Loaded[T Provider](s *Set, name string) (T, bool) {
	p, err := Need[T](s, name)
	return p, err == nil
}

// Started builds a set over ps and starts them all (tests, and tools that
// build collectors by hand).
func Started(env *Env, ps ...Provider) *Set {
	s := NewSet(ps...)
	names := make([]string, len(ps))
	for i, p := range ps {
		names[i] = p.Name()
	}
	_ = s.Start(env, names) // every name is in the set
	return s
}

// Put adds p to the set as started without calling its Start: tests hand
// in a provider built by hand (eBPF programs said loaded without a kernel).
func (s *Set) Put(p Provider) {
	s.all = append(s.all, p)
	s.started[p.Name()] = &started{p: p}
}
