// SPDX-License-Identifier: Apache-2.0

package discovery

import (
	"bytes"
	"context"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/jobscope/jobscope/internal/boundedread"
)

// Reading /proc/<pid>/environ takes the process's mm lock: it waits as
// long as another holder keeps it (a process stuck in a page fault on a
// hung filesystem), and the read cannot be cancelled. Discovery runs inside
// the scrape, so it waits for one such read at most environWait; the read
// goes on in the background, holding one of environSlots, and the process
// is not read again until it returns. With every slot held by a stuck read,
// metadata from the environment waits (squeue fills it in), and discovery
// never waits.
const (
	environWait  = 200 * time.Millisecond
	environSlots = 2
)

type environReader struct {
	slots chan struct{}

	mu       sync.Mutex
	inflight map[string]bool // paths whose read outlived its wait
}

func newEnvironReader() *environReader {
	return &environReader{slots: make(chan struct{}, environSlots), inflight: map[string]bool{}}
}

// read returns the file's content (its first maxEnviron bytes, cut after
// the last whole record), or nil when it cannot be read within environWait
// or before ctx's deadline (or is still blocked from an earlier call).
func (e *environReader) read(ctx context.Context, path string) []byte {
	e.mu.Lock()
	stuck := e.inflight[path]
	e.mu.Unlock()
	if stuck {
		return nil
	}
	select {
	case e.slots <- struct{}{}:
	default:
		return nil // every slot is held by a blocked read
	}
	type result struct {
		b   []byte
		err error
	}
	done := make(chan result, 1)
	go func() {
		b, err := readEnvironFile(path)
		done <- result{b, err}
		<-e.slots
		e.mu.Lock()
		delete(e.inflight, path)
		e.mu.Unlock()
	}()
	wait := environWait
	if dl, ok := ctx.Deadline(); ok {
		wait = max(0, min(wait, time.Until(dl)))
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case r := <-done:
		if r.err != nil {
			return nil
		}
		return r.b
	case <-timer.C:
		e.mu.Lock()
		defer e.mu.Unlock()
		select {
		case r := <-done: // it returned as the timer fired
			if r.err == nil {
				return r.b
			}
		default:
			// Marked under mu: the read's own delete comes after.
			e.inflight[path] = true
		}
		return nil
	}
}

// readEnvironFile reads at most maxEnviron bytes of an environ file, not
// through a symlink. A cut environment keeps only its whole records: a
// value cut short must not pass for the real one.
func readEnvironFile(path string) ([]byte, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd)
	b, truncated, err := boundedread.Fd(fd, maxEnviron)
	if err != nil {
		return nil, err
	}
	if truncated {
		b = b[:bytes.LastIndexByte(b, 0)+1]
	}
	return b, nil
}
