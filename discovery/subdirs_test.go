// SPDX-License-Identifier: Apache-2.0

package discovery

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
)

// A getdents that meets a pending signal returns the entries it has so
// far: a short read is not the end of a directory, only an empty one is.
// Go's scheduler signals its own threads (SIGURG) all the time, most under
// load and the race detector; a listing that stopped at a short read lost
// a job's directory for one scrape, and the job came back under another
// key (its metadata and counters started afresh). Found by
// TestOverlappingScrapesKeepV1Events failing in CI.
func TestListDirsSurvivesSignals(t *testing.T) {
	dir := t.TempDir()
	const n = 64
	for i := range n {
		if err := os.Mkdir(filepath.Join(dir, fmt.Sprintf("job_%d", i)), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
				_ = syscall.Kill(os.Getpid(), syscall.SIGURG) // ignored by the runtime but for preemption
			}
		}
	}()
	defer func() { close(stop); wg.Wait() }()
	for i := range 3000 {
		ents, ok := listDirs(dir)
		if !ok || len(ents) != n {
			t.Fatalf("listing %d: %d of %d directories (ok %v)", i, len(ents), n, ok)
		}
	}
}
