// SPDX-License-Identifier: Apache-2.0

//go:build linux

package ebpfprogs

import (
	"bytes"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jobscope/jobscope/bpf"
)

// TestDetachUnused: a node run with the ebpf collector turned off removes
// the links a previous run left pinned (they would count on with no
// reader); the maps stay. With nothing pinned it says nothing.
func TestDetachUnused(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root (bpffs, loading programs)")
	}
	pin := "/sys/fs/bpf/jobscope_test_ep_" + strconv.FormatInt(time.Now().UnixNano(), 36)
	t.Cleanup(func() {
		bpf.Unpin(pin)
		os.Remove(pin)
	})
	o, err := bpf.Load(bpf.Config{PinPath: pin, MaxJobs: 8, V2JobLevel: 3})
	if err != nil {
		t.Skipf("programs do not load here: %v", err)
	}
	o.Close()
	if len(bpf.PinnedLinks(pin)) == 0 {
		t.Fatal("no links pinned by the previous run")
	}
	var log bytes.Buffer
	p := New()
	p.Opts.PinPath = pin
	p.DetachUnused(slog.New(slog.NewTextHandler(&log, nil)))
	if got := bpf.PinnedLinks(pin); len(got) != 0 {
		t.Errorf("links still pinned: %v", got)
	}
	if !strings.Contains(log.String(), "detached the programs a previous run left attached") {
		t.Errorf("log: %q", log.String())
	}
	if _, err := os.Stat(pin + "/job_counters"); err != nil {
		t.Errorf("the maps went too: %v", err)
	}
	log.Reset()
	p.DetachUnused(slog.New(slog.NewTextHandler(&log, nil)))
	if log.Len() != 0 {
		t.Errorf("nothing pinned, but it logged %q", log.String())
	}
}
