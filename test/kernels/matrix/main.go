// SPDX-License-Identifier: Apache-2.0

// Command matrix is `make kernel-matrix`: it boots Debian's kernels 5.10,
// 6.1 (also with its BTF hidden), 6.12 and 7.2 under qemu (TCG) with an
// initramfs holding test/kernels/vmcheck as /init and the jobscope binary,
// runs vmcheck on this machine too, and prints which programs load, which
// tier jobscope falls back to and what it then counts, per kernel. It fails
// when a kernel does not do what the table in docs/ebpf.md says.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/jobscope/jobscope/test/kernels/report"
)

// What a kernel is expected to do.
const (
	wantAll  = "all" // every program loads; running slices counted at each read
	wantNone = "off" // nothing loads; jobscope falls back to cgroupfs and procfs
)

type boot struct {
	name, suite string // suite "" is this machine
	noBTF       bool
	want        string
}

var boots = []boot{
	{"Debian 11 bullseye", "bullseye", false, wantNone},
	{"Debian 12 bookworm", "bookworm", false, wantAll},
	{"Debian 12 bookworm, BTF hidden", "bookworm", true, wantNone},
	{"Debian 13 trixie", "trixie", false, wantAll},
	{"Debian forky", "forky", false, wantAll},
	{"this machine", "", false, wantAll},
}

func main() {
	work := flag.String("work", "/var/tmp/jobscope-kernels", "cache of kernel packages, images and console logs")
	only := flag.String("only", "", "comma-separated suites to boot (default all; \"host\" for this machine)")
	flag.Parse()
	if err := os.MkdirAll(*work, 0o755); err != nil {
		fatal(err)
	}
	start := time.Now()
	bin := filepath.Join(*work, "bin")
	must(build(bin))
	initrd := filepath.Join(*work, "initramfs.img")
	must(writeInitramfs(initrd, filepath.Join(bin, "vmcheck"), filepath.Join(bin, "jobscope")))
	mirrorURL, err := mirror()
	must(err)
	if _, err := exec.LookPath("qemu-system-x86_64"); err != nil {
		fatal(fmt.Errorf("qemu-system-x86_64 not installed (apt-get install qemu-system-x86): %w", err))
	}

	var rows []row
	failed := false
	for _, b := range boots {
		if *only != "" && !selected(*only, b) {
			continue
		}
		var res *report.Result
		var log string
		var took time.Duration
		if b.suite == "" {
			t0 := time.Now()
			res, log, err = onHost(bin)
			took = time.Since(t0)
		} else {
			var vmlinuz string
			if vmlinuz, err = kernel(*work, mirrorURL, b.suite); err == nil {
				res, log, took, err = vm(*work, b, vmlinuz, initrd)
			}
		}
		rw := row{boot: b, res: res, took: took, err: err, log: log}
		rw.problems = check(b, res, err)
		failed = failed || len(rw.problems) > 0
		rows = append(rows, rw)
		fmt.Fprintf(os.Stderr, "%s: %s (%s)\n", b.name, verdict(rw.problems), rw.took.Round(time.Second))
	}
	table := render(rows)
	fmt.Print(table)
	if err := os.WriteFile(filepath.Join(*work, "matrix.md"), []byte(table), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "kernel matrix:", err)
	}
	fmt.Printf("\nkernel matrix: %s in %s, of which %s waiting for other VMs (console logs in %s/logs)\n",
		verdict(map[bool][]string{true: {"failed"}}[failed]), time.Since(start).Round(time.Second), lockWait.Round(time.Second), *work)
	if failed {
		os.Exit(1)
	}
}

func selected(only string, b boot) bool {
	for _, s := range strings.Split(only, ",") {
		if s == b.suite || (s == "host" && b.suite == "") {
			return true
		}
	}
	return false
}

// build makes static binaries: the VM has no libc.
func build(bin string) error {
	for _, b := range [][]string{
		{"-o", filepath.Join(bin, "vmcheck"), "./test/kernels/vmcheck"},
		{"-tags", "nogpu", "-o", filepath.Join(bin, "jobscope"), "./cmd/jobscope"},
	} {
		cmd := exec.Command("go", append([]string{"build", "-trimpath"}, b...)...)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("go build %v: %v\n%s", b, err, out)
		}
	}
	return nil
}

// lockWait is the time spent waiting for other engineers' VMs.
var lockWait time.Duration

// vm boots one kernel and says how long qemu ran (not counting the wait for
// the lock). Under TCG a boot sometimes dies of a kernel Oops (about one in
// six, early or while a tracepoint is patched in or out): a boot without a
// result is tried up to three times.
func vm(work string, b boot, vmlinuz, initrd string) (*report.Result, string, time.Duration, error) {
	logs := filepath.Join(work, "logs")
	if err := os.MkdirAll(logs, 0o755); err != nil {
		return nil, "", 0, err
	}
	name := b.suite
	appendArgs := "console=ttyS0 panic=-1 quiet"
	if b.noBTF {
		name += "-nobtf"
		appendArgs += " jobscope.nobtf=1"
	}
	waitFrom := time.Now()
	unlock, err := lock("/tmp/jobscope-vm.lock")
	if err != nil {
		return nil, "", 0, err
	}
	defer unlock()
	t0 := time.Now()
	lockWait += t0.Sub(waitFrom)
	var out []byte
	var res *report.Result
	for try := 0; try < 3 && res == nil; try++ {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		cmd := exec.CommandContext(ctx, "qemu-system-x86_64", "-accel", "tcg", "-cpu", "max", "-m", "1024", "-smp", "2",
			"-kernel", vmlinuz, "-initrd", initrd, "-append", appendArgs,
			"-nographic", "-no-reboot", "-nic", "none", "-monitor", "none")
		out, err = cmd.CombinedOutput()
		cancel()
		logPath := filepath.Join(logs, fmt.Sprintf("%s.%d.log", name, try))
		if err := os.WriteFile(logPath, out, 0o644); err != nil {
			logPath = "(log not saved: " + err.Error() + ")"
		}
		if res = report.Parse(string(out)); res == nil {
			// Seen here: a kernel Oops ("int3") while the kernel patches its
			// own code (a tracepoint attached or detached), the TCG issue
			// the VM notes describe; the same boot passes when repeated.
			fmt.Fprintf(os.Stderr, "%s: no result (qemu: %v, kernel Oops: %v), see %s; booting again\n",
				b.name, err, strings.Contains(string(out), "Oops"), logPath)
		}
	}
	took := time.Since(t0)
	if res == nil {
		return nil, string(out), took, fmt.Errorf("no result line on the console (qemu: %v)", err)
	}
	return res, string(out), took, nil
}

func onHost(bin string) (*report.Result, string, error) {
	out, err := exec.Command(filepath.Join(bin, "vmcheck"), "-host", "-jobscope", filepath.Join(bin, "jobscope")).CombinedOutput()
	res := report.Parse(string(out))
	if res == nil {
		return nil, string(out), fmt.Errorf("vmcheck: %v\n%s", err, out)
	}
	return res, string(out), nil
}

// lock takes the machine-wide lock every qemu boot is made under.
func lock(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, err
	}
	return func() { f.Close() }, nil
}

func must(err error) {
	if err != nil {
		fatal(err)
	}
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "kernel matrix:", err)
	os.Exit(1)
}
