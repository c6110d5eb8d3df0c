package collector

import "sync"

// Shared builds objects that several collectors use (one Slurm command
// cache for all cluster collectors, one GPU backend) once, on first use.
type Shared struct {
	mu   sync.Mutex
	objs map[string]any
}

// NewShared returns an empty set.
func NewShared() *Shared { return &Shared{objs: map[string]any{}} }

// Get returns the object under key, building it with build the first time.
func (s *Shared) Get(key string, build func() (any, error)) (any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if o, ok := s.objs[key]; ok {
		return o, nil
	}
	o, err := build()
	if err != nil {
		return nil, err
	}
	s.objs[key] = o
	return o, nil
}

// Lookup returns the object under key without building it.
func (s *Shared) Lookup(key string) (any, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	o, ok := s.objs[key]
	return o, ok
}

// Set stores an object under key, replacing what was there.
func (s *Shared) Set(key string, o any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.objs[key] = o
}

// Close closes every shared object that can be closed (the GPU backend,
// the Slurm command cache), once, when the exporter stops.
func (s *Shared) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, o := range s.objs {
		switch c := o.(type) {
		case interface{ Close() error }:
			_ = c.Close()
		case interface{ Close() }:
			c.Close()
		}
		delete(s.objs, k)
	}
}
