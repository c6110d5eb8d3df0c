// SPDX-License-Identifier: Apache-2.0

// Command vmcheck is the whole userspace of a kernel-matrix VM (it runs as
// /init from an initramfs, see test/kernels/matrix) or, with -host, a check
// of the running machine. It asks the loader's feature probes, loads every
// BPF program alone, loads them as jobscope does and compares what they count
// with cpu.stat, starts the jobscope binary and scrapes it, prints one result
// line on the console and powers the VM off.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/jobscope/jobscope/test/kernels/report"
)

// A child process of vmcheck does one job-side task, chosen by role.
const roleEnv = "JSX_ROLE"

func main() {
	if role := os.Getenv(roleEnv); role != "" {
		os.Exit(child(role))
	}
	host := flag.Bool("host", false, "check this machine: use its mounts, do not power off")
	jobscope := flag.String("jobscope", "/bin/jobscope", "jobscope binary to start")
	flag.Parse()
	inVM := !*host
	if inVM && os.Getenv("JSX_SETUP") == "" {
		// Packages read /proc at init (cilium/ebpf caches its bpffs mounts):
		// start again once everything is mounted.
		state := "ok"
		if err := setup(); err != nil {
			state = err.Error()
		}
		err := unix.Exec("/proc/self/exe", os.Args, append(os.Environ(), "JSX_SETUP="+state))
		fmt.Println("JSX-BEGIN\n" + (&report.Result{Failures: []string{"re-exec: " + err.Error()}}).Line())
		_ = unix.Reboot(unix.LINUX_REBOOT_CMD_POWER_OFF) // returns only on failure; qemu's timeout ends it then
	}
	var r report.Result
	if s := os.Getenv("JSX_SETUP"); inVM && s != "ok" {
		r.Failures = append(r.Failures, "setup: "+s)
	}
	if inVM {
		_, err := os.Stat("/run/empty-btf")
		r.NoBTF = err == nil
	}
	fmt.Println("JSX-BEGIN")
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		r.Failures = append(r.Failures, "uname: "+err.Error())
	}
	r.Kernel = unix.ByteSliceToString(u.Release[:])
	if err := run(&r, *jobscope); err != nil {
		r.Failures = append(r.Failures, err.Error())
	}
	fmt.Println(r.Line())
	if inVM {
		unix.Sync()
		_ = unix.Reboot(unix.LINUX_REBOOT_CMD_POWER_OFF) // returns only on failure; qemu's timeout ends it then
		select {}
	}
	if len(r.Failures) > 0 {
		os.Exit(1)
	}
}

// setup mounts what an init system would, brings loopback up, enables the
// cgroup v2 controllers jobscope reads, and hides BTF when asked.
func setup() error {
	for _, m := range []struct{ src, dst, typ, opts string }{
		{"proc", "/proc", "proc", ""},
		{"sysfs", "/sys", "sysfs", ""},
		{"devtmpfs", "/dev", "devtmpfs", ""},
		{"tmpfs", "/tmp", "tmpfs", ""},
		{"tmpfs", "/run", "tmpfs", ""},
		{"cgroup2", "/sys/fs/cgroup", "cgroup2", ""},
		{"bpf", "/sys/fs/bpf", "bpf", "mode=0700"},
	} {
		_ = os.MkdirAll(m.dst, 0o755) // the mount below says what went wrong
		if err := unix.Mount(m.src, m.dst, m.typ, 0, m.opts); err != nil {
			return fmt.Errorf("mount %s: %w", m.dst, err)
		}
	}
	if err := loopbackUp(); err != nil {
		return err
	}
	cmdline, _ := os.ReadFile("/proc/cmdline")
	if strings.Contains(string(cmdline), "jobscope.nobtf=1") {
		// The kernel has BTF; an empty file over it is what jobscope sees
		// on a kernel built without it.
		empty := "/run/empty-btf"
		if err := os.WriteFile(empty, nil, 0o444); err != nil {
			return err
		}
		if err := unix.Mount(empty, "/sys/kernel/btf/vmlinux", "", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("hiding BTF: %w", err)
		}
	}
	return nil
}

func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return err
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	return unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr)
}

// enableControllers makes the v2 controllers available down to dir's
// parent, as systemd and Slurm do for a job (a leaf holds the processes).
func enableControllers(root, dir string) {
	rel, _ := filepath.Rel(root, filepath.Dir(dir))
	p := root
	parts := []string{"."}
	if rel != "." {
		parts = append(parts, strings.Split(rel, "/")...)
	}
	for _, part := range parts {
		p = filepath.Join(p, part)
		for _, c := range []string{"cpu", "cpuset", "memory", "io", "pids"} {
			// A controller the kernel lacks, or one bound elsewhere, is
			// simply not enabled.
			_ = os.WriteFile(filepath.Join(p, "cgroup.subtree_control"), []byte("+"+c), 0)
		}
	}
}

// pinSelf keeps every thread of this process on cpu (threads made later
// inherit it): the reader must not preempt the burner on its CPU.
func pinSelf(cpu int) {
	var set unix.CPUSet
	set.Set(cpu)
	tids, _ := os.ReadDir("/proc/self/task")
	for _, d := range tids {
		var tid int
		if _, err := fmt.Sscan(d.Name(), &tid); err == nil {
			_ = unix.SchedSetaffinity(tid, &set) // a thread that ended meanwhile
		}
	}
	runtime.Gosched()
}
