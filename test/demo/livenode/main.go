// SPDX-License-Identifier: Apache-2.0

// Command livenode keeps a copy of the demo fixture (testdata/demo) moving,
// so that `make demo` shows what a running node shows: CPU time that grows,
// RAPL counters that advance, and so per-job energy that is attributed.
//
// It is a demo tool, not part of jobscope: the exporter reads the copy as it
// reads any node, and nothing in jobscope knows that the node is simulated.
// What moves, and how fast, is in the fixture's live.txt.
package main

import (
	"flag"
	"fmt"
	"io/fs"
	"log"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"
)

func main() {
	fixture := flag.String("fixture", "testdata/demo", "the demo fixture (read only)")
	dir := flag.String("dir", "", "where the live copy goes (replaced; must not exist or hold a previous copy)")
	interval := flag.Duration("interval", time.Second, "how often the counters advance")
	once := flag.Bool("once", false, "write the copy and exit")
	startAt := flag.Int64("start", 0, "the demo's start, Unix seconds (default now); with -once, the same value keeps the jobs the same")
	elapsed := flag.Duration("elapsed", 0, "with -once: write the counters as this long after the start")
	flag.Parse()
	if *dir == "" || *interval <= 0 {
		log.Fatal("livenode: -dir is required and -interval must be positive")
	}
	spec, err := readSpec(filepath.Join(*fixture, "live.txt"))
	if err != nil {
		log.Fatal(err)
	}
	start := time.Now()
	if *startAt != 0 {
		start = time.Unix(*startAt, 0)
	}
	if err := prepare(*fixture, *dir, spec, start); err != nil {
		log.Fatal(err)
	}
	if *once {
		if err := advance(*fixture, *dir, spec, *elapsed); err != nil {
			log.Fatal(err)
		}
		return
	}
	// Ready: the exporter may start once this file exists.
	if err := os.WriteFile(filepath.Join(*dir, ".ready"), nil, 0o644); err != nil {
		log.Fatal(err)
	}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGINT, syscall.SIGTERM)
	if err := run(*fixture, *dir, spec, start, *interval, stop); err != nil {
		log.Fatal(err)
	}
}

// run advances the copy every interval until a signal comes.
func run(fixture, dir string, spec *spec, start time.Time, interval time.Duration, stop <-chan os.Signal) error {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return nil
		case now := <-tick.C:
			if err := advance(fixture, dir, spec, now.Sub(start)); err != nil {
				return err
			}
		}
	}
}

// prepare replaces dir with a copy of the fixture, shifted so that the
// fixture's reference time is start.
func prepare(fixture, dir string, spec *spec, start time.Time) error {
	if _, err := os.Stat(dir); err == nil {
		// Only a previous live copy may be replaced, never a directory that
		// happens to be named.
		if _, err := os.Stat(filepath.Join(dir, "live.txt")); err != nil {
			return fmt.Errorf("livenode: %s exists and is not a live demo copy", dir)
		}
		if err := os.RemoveAll(dir); err != nil {
			return err
		}
	}
	if err := copyTree(fixture, dir); err != nil {
		return err
	}
	shift := start.Unix() - spec.reference
	for _, f := range spec.starts {
		if err := shiftStart(filepath.Join(fixture, f), filepath.Join(dir, f), shift); err != nil {
			return err
		}
	}
	return advance(fixture, dir, spec, 0)
}

// copyTree copies regular files, directories and symbolic links (a process's
// exe and fds are links in the fixture).
func copyTree(from, to string) error {
	return filepath.WalkDir(from, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(from, path)
		if err != nil {
			return err
		}
		dst := filepath.Join(to, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(dst, 0o755)
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(path)
			if err != nil {
				return err
			}
			return os.Symlink(target, dst)
		default:
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			return os.WriteFile(dst, b, 0o644)
		}
	})
}

// advance writes the counters as they are elapsed after the start.
func advance(fixture, dir string, spec *spec, elapsed time.Duration) error {
	for _, j := range spec.jobs {
		age := float64(spec.reference - j.start)
		scale := (age + elapsed.Seconds()) / age
		rel := filepath.Join("cgroup", j.dir, "cpu.stat")
		if err := scaleCPUStat(filepath.Join(fixture, rel), filepath.Join(dir, rel), scale); err != nil {
			return err
		}
	}
	for _, z := range spec.zones {
		base := filepath.Join("sys", "class", "powercap", z.zone)
		if err := advanceRAPL(filepath.Join(fixture, base), filepath.Join(dir, base), z.watts*elapsed.Seconds()); err != nil {
			return err
		}
	}
	return nil
}

// writeAtomic replaces a file by rename, so the exporter never reads half of
// one.
func writeAtomic(path string, b []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
