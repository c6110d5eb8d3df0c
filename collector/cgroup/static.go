package cgroup

import (
	"sync"
	"time"
)

// Limits and cpusets are set by Slurm when a job starts and change only by
// an admin's hand, yet they are a quarter of the files read per job. They
// are re-read every staticTTL, not every scrape.
const staticTTL = time.Minute

// staticFiles caches the content of slow-changing cgroup files.
type staticFiles struct {
	mu    sync.Mutex
	files map[string]*staticFile
	gen   uint64
	now   func() time.Time
}

type staticFile struct {
	content []byte
	readAt  time.Time
	gen     uint64
}

func newStaticFiles(now func() time.Time) *staticFiles {
	return &staticFiles{files: map[string]*staticFile{}, now: now}
}

// get returns the cached content of path if it is fresh.
func (c *staticFiles) get(path string) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	f, ok := c.files[path]
	if !ok || c.now().Sub(f.readAt) >= staticTTL {
		return nil, false
	}
	f.gen = c.gen
	return f.content, true
}

func (c *staticFiles) put(path string, content []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.files[path] = &staticFile{content: append([]byte(nil), content...), readAt: c.now(), gen: c.gen}
}

// endScrape drops files of cgroups not read in the scrape that ends, so
// ended jobs leave nothing behind.
func (c *staticFiles) endScrape() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for p, f := range c.files {
		if f.gen != c.gen {
			delete(c.files, p)
		}
	}
	c.gen++
}
