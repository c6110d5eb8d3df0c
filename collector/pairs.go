// SPDX-License-Identifier: Apache-2.0

package collector

import (
	"sync"

	dto "github.com/prometheus/client_model/go"
)

// PairCache shares label pairs of extra label values (type="anon",
// core="3", exe="/usr/bin/python3") across the jobs and collectors of a
// collection and into the next one, so a series costs one allocation and
// one label slice. The pairs are never written after creation, which is
// what sharing needs.
//
// Some of these values come from the jobs (executable paths), so the cache
// must neither grow with them nor outlive them. It keeps two generations:
// the exporter starts a new one at every collection, a pair used in a
// collection is (re)filed in the current one, and a pair that no
// collection used since the one before last is dropped. A node whose jobs
// ended holds no pair of theirs after two collections, even when no job is
// left to call the cache. Each generation holds at most pairCacheMax pairs
// of values of at most pairCacheValueMax bytes; past that, pairs are built
// per series (correct, only slower).
type PairCache struct {
	mu       sync.RWMutex
	cur, old map[pairKey]*dto.LabelPair
}

type pairKey struct{ name, value string }

const (
	// pairCacheMax bounds a generation: a 512-job node at full level
	// shares under a thousand distinct extra values.
	pairCacheMax = 1 << 12
	// pairCacheValueMax leaves long values out of the cache: they are
	// job-specific (paths) and gain nothing from sharing.
	pairCacheValueMax = 128
)

// NewPairCache returns an empty cache.
func NewPairCache() *PairCache { return &PairCache{cur: map[pairKey]*dto.LabelPair{}} }

// rotate starts a generation: pairs not used since the previous rotation
// are dropped.
func (c *PairCache) rotate() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.old, c.cur = c.cur, make(map[pairKey]*dto.LabelPair, len(c.cur))
}

// Len is the number of pairs held (tests).
func (c *PairCache) Len() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.cur) + len(c.old)
}

func (c *PairCache) get(name, value string) *dto.LabelPair {
	if len(value) > pairCacheValueMax {
		return &dto.LabelPair{Name: &name, Value: &value}
	}
	k := pairKey{name, value}
	c.mu.RLock()
	p := c.cur[k]
	c.mu.RUnlock()
	if p != nil {
		return p
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if p = c.cur[k]; p != nil {
		return p
	}
	if p = c.old[k]; p == nil {
		p = &dto.LabelPair{Name: &name, Value: &value}
	}
	if len(c.cur) < pairCacheMax {
		c.cur[k] = p
	}
	return p
}
