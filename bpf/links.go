// SPDX-License-Identifier: Apache-2.0

//go:build linux

package bpf

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
)

// Links are pinned next to the maps, in linksDir, one file per hook (its
// role, not its program's name: account_switch and account_switch_plain
// fill the same hook). A pinned link stays attached when jobscope exits, so
// the programs go on counting into the pinned maps while it restarts or is
// upgraded: a task that starts and ends while jobscope is down is counted
// (without this, an upgrade lost every such task; issue 29's site lost 2 s
// of an array job's CPU time to the 20 s a restart takes under TCG).
//
// The next run hands each hook over to its own program without a gap and
// without counting twice:
//   - tracing hooks (sched_switch, cgroup_rmdir, inet_sock_set_state) have
//     no in-place update: the new link is attached first, then the old one
//     removed. While both run, they share the pinned task storage and claim
//     each task's runtime with a compare-and-swap (claim_runtime), so each
//     nanosecond is counted once; the IO baselines are plain stores made by
//     both programs in turn on the same CPU, so the second sees no change.
//   - cgroup hooks (sock_create, skb ingress and egress) are updated in place
//     (BPF_LINK_UPDATE): one program runs at any time, so no packet is
//     counted twice.
//
// Removing a pin file detaches its program once no process holds it:
// Detach does that; so do Unpin, the package's removal and rm -r of the pin
// directory.
const linksDir = "links"

// Hook roles: the pin file names under linksDir.
const (
	hookSchedSwitch = "sched_switch"
	hookCgroupRmdir = "cgroup_rmdir"
	hookListen      = "inet_sock_set_state"
	hookSockCreate  = "cgroup_sock_create"
	hookSkbIngress  = "cgroup_skb_ingress"
	hookSkbEgress   = "cgroup_skb_egress"
)

var allHooks = []string{hookSchedSwitch, hookCgroupRmdir, hookListen, hookSockCreate, hookSkbIngress, hookSkbEgress}

// Detach removes the pinned links under pinPath: their programs stop once
// no process holds them (a running jobscope keeps its own until it exits).
// The maps stay pinned. Nothing pinned is not an error.
func Detach(pinPath string) error {
	if pinPath == "" {
		return nil
	}
	dir := filepath.Join(pinPath, linksDir)
	var errs []error
	for _, h := range allHooks {
		if err := os.Remove(filepath.Join(dir, h)); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	// Files this build does not know (a later build's hooks) go too.
	if entries, err := os.ReadDir(dir); err == nil {
		for _, e := range entries {
			if err := os.Remove(filepath.Join(dir, e.Name())); err != nil && !errors.Is(err, os.ErrNotExist) {
				errs = append(errs, err)
			}
		}
	}
	if err := os.Remove(dir); err != nil && !errors.Is(err, os.ErrNotExist) {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// PinnedLinks lists the hooks with a pinned link under pinPath.
func PinnedLinks(pinPath string) []string {
	var hooks []string
	for _, h := range allHooks {
		if exists(filepath.Join(pinPath, linksDir, h)) {
			hooks = append(hooks, h)
		}
	}
	return hooks
}

// handover attaches prog to hook. Without a pin path it only attaches.
// With one, it takes over the link a previous run pinned for the hook (see
// linksDir) and pins its own in its place.
func (o *Objects) handover(hook string, prog *ebpf.Program, attach func() (link.Link, error)) (link.Link, error) {
	if o.cfg.PinPath == "" {
		return attach()
	}
	path := filepath.Join(o.cfg.PinPath, linksDir, hook)
	old, err := o.pinnedLink(path)
	if err != nil {
		return nil, err
	}
	if old != nil && cgroupLink(old) {
		// In place: the hook never runs both programs, nor neither.
		if err := old.Update(prog); err == nil {
			o.handedOver++
			return old, nil
		}
		// Cannot update: detach the old one first. A packet between the two
		// goes uncounted rather than counted twice.
		o.cfg.Log.Warn("ebpf: could not update the pinned link in place; replacing it", "hook", hook, "err", err)
		errs := errors.Join(old.Unpin(), old.Close())
		old = nil
		if errs != nil {
			return nil, fmt.Errorf("removing the pinned link of %s: %w", hook, errs)
		}
	}
	l, err := attach()
	if err != nil {
		if old != nil {
			// The previous run's program stays; this run reports the error.
			old.Close()
		}
		return nil, err
	}
	// Pinned under a temporary name, then renamed over the old pin: the
	// hook always has a pinned link, so a crash in between leaves one
	// attached program, never none. (bpffs refuses names with a dot.)
	tmp := path + "_new"
	os.Remove(tmp)
	if err := l.Pin(tmp); err != nil {
		l.Close()
		if old != nil {
			old.Close()
		}
		return nil, fmt.Errorf("pinning the link of %s: %w", hook, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		// The rename's error is the one to report; the temporary pin goes
		// with the link.
		_ = l.Unpin()
		l.Close()
		if old != nil {
			old.Close()
		}
		return nil, fmt.Errorf("renaming the pinned link of %s: %w", hook, err)
	}
	if old != nil {
		// Its pin is gone (replaced): closing the last hold detaches it.
		old.Close()
		o.handedOver++
	}
	return l, nil
}

// pinnedLink opens the link a previous run pinned at path, if any. A file
// there that is not a link is removed.
func (o *Objects) pinnedLink(path string) (link.Link, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("pin path: %w", err)
	}
	if !exists(path) {
		return nil, nil
	}
	l, err := link.LoadPinnedLink(path, nil)
	if err != nil {
		o.cfg.Log.Warn("ebpf: removing a pin that is not a usable link", "path", path, "err", err)
		if rerr := os.Remove(path); rerr != nil {
			return nil, fmt.Errorf("removing %s: %w", path, rerr)
		}
		return nil, nil
	}
	return l, nil
}

// cgroupLink says whether l is a cgroup link (updatable in place).
func cgroupLink(l link.Link) bool {
	info, err := l.Info()
	return err == nil && info.Type == link.CgroupType
}

// dropUnused removes pinned links of hooks this run does not attach (the
// network programs turned off, or failing now): their programs would go on
// counting into the maps.
func (o *Objects) dropUnused(attached map[string]bool) {
	if o.cfg.PinPath == "" {
		return
	}
	for _, h := range PinnedLinks(o.cfg.PinPath) {
		if attached[h] {
			continue
		}
		if err := os.Remove(filepath.Join(o.cfg.PinPath, linksDir, h)); err != nil {
			o.cfg.Log.Warn("ebpf: could not remove a pinned link this run does not use", "hook", h, "err", err)
			continue
		}
		o.cfg.Log.Info("ebpf: detached a previous run's program this run does not attach", "hook", h)
	}
}
