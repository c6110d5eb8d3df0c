// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// mirror is the Debian archive this machine's apt uses (the only one
// reachable from CI machines): the first URIs line of its sources.
func mirror() (string, error) {
	for _, f := range []string{"/etc/apt/sources.list.d/debian.sources", "/etc/apt/sources.list"} {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(strings.NewReader(string(b)))
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			switch {
			case len(fields) >= 2 && fields[0] == "URIs:":
				return fields[1], nil
			case len(fields) >= 3 && fields[0] == "deb" && strings.HasPrefix(fields[1], "http"):
				return fields[1], nil
			}
		}
	}
	return "", fmt.Errorf("no Debian mirror in the apt sources")
}

// kernel fetches the suite's current amd64 kernel package (cached under
// work/debs by its file name, so a new kernel in the suite is a cache miss)
// and returns the path of its vmlinuz.
func kernel(work, mirrorURL, suite string) (string, error) {
	dir := filepath.Join(work, "apt", suite)
	for _, d := range []string{"lists/partial", "cache/archives/partial", "etc"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return "", err
		}
	}
	list := filepath.Join(dir, "etc", "sources.list")
	if err := os.WriteFile(list, []byte(fmt.Sprintf("deb [trusted=yes] %s %s main\n", mirrorURL, suite)), 0o644); err != nil {
		return "", err
	}
	opts := []string{"-o", "Dir::Etc::SourceList=" + list, "-o", "Dir::Etc::SourceParts=/dev/null",
		"-o", "Dir::State::Lists=" + filepath.Join(dir, "lists"), "-o", "Dir::Cache=" + filepath.Join(dir, "cache"),
		"-o", "APT::Architecture=amd64", "-o", "Debug::NoLocking=1", "-o", "APT::Sandbox::User=root"}
	if out, err := exec.Command("apt-get", append(opts, "-qq", "update")...).CombinedOutput(); err != nil {
		return "", fmt.Errorf("apt-get update (%s): %v\n%s", suite, err, out)
	}
	out, err := exec.Command("apt-cache", append(opts, "depends", "linux-image-amd64")...).Output()
	if err != nil {
		return "", fmt.Errorf("apt-cache depends linux-image-amd64 (%s): %v", suite, err)
	}
	pkg := ""
	for _, l := range strings.Split(string(out), "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), "Depends: "); ok && strings.HasPrefix(v, "linux-image-") {
			pkg = v
		}
	}
	if pkg == "" {
		return "", fmt.Errorf("%s: no kernel package behind linux-image-amd64:\n%s", suite, out)
	}
	deb, err := download(filepath.Join(work, "debs"), opts, pkg)
	if err != nil {
		return "", err
	}
	kdir := filepath.Join(work, "kernels", strings.TrimSuffix(filepath.Base(deb), ".deb"))
	if k := findVmlinuz(kdir); k != "" {
		return k, nil
	}
	member, err := vmlinuzIn(deb)
	if err != nil {
		// From Debian forky on, the image package is a shell around
		// linux-binary-<version>, which holds the kernel.
		dep, _ := exec.Command("dpkg-deb", "-f", deb, "Depends").Output()
		for _, d := range strings.Split(string(dep), ",") {
			if name, _, _ := strings.Cut(strings.TrimSpace(d), " "); strings.HasPrefix(name, "linux-binary-") {
				if deb, err = download(filepath.Join(work, "debs"), opts, name); err != nil {
					return "", err
				}
				member, err = vmlinuzIn(deb)
			}
		}
		if err != nil {
			return "", err
		}
	}
	if err := os.MkdirAll(kdir, 0o755); err != nil {
		return "", err
	}
	// Only the kernel image: no modules are needed (no disk, no NIC).
	x := exec.Command("sh", "-c", `dpkg-deb --fsys-tarfile "$1" | tar -x -C "$2" "$3"`, "sh", deb, kdir, member)
	if out, err := x.CombinedOutput(); err != nil {
		return "", fmt.Errorf("extracting %s from %s: %v\n%s", member, deb, err, out)
	}
	if k := findVmlinuz(kdir); k != "" {
		return k, nil
	}
	return "", fmt.Errorf("%s: %s not extracted", deb, member)
}

// vmlinuzIn names the kernel image in a package: /boot/vmlinuz-<version>, or
// /usr/lib/modules/<version>/vmlinuz (forky).
func vmlinuzIn(deb string) (string, error) {
	out, err := exec.Command("dpkg-deb", "-c", deb).Output()
	if err != nil {
		return "", fmt.Errorf("dpkg-deb -c %s: %w", deb, err)
	}
	for _, l := range strings.Split(string(out), "\n") {
		f := strings.Fields(l)
		if len(f) == 0 || !strings.HasPrefix(f[0], "-") {
			continue
		}
		p := f[len(f)-1]
		if strings.HasPrefix(p, "./boot/vmlinuz-") || (strings.HasPrefix(p, "./usr/lib/modules/") && strings.HasSuffix(p, "/vmlinuz")) {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s holds no kernel image", deb)
}

func findVmlinuz(dir string) string {
	for _, g := range []string{"boot/vmlinuz-*", "usr/lib/modules/*/vmlinuz"} {
		if k, _ := filepath.Glob(filepath.Join(dir, g)); len(k) == 1 {
			return k[0]
		}
	}
	return ""
}

// download fetches a package into dir unless a version of it is there.
func download(dir string, opts []string, pkg string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	if m, _ := filepath.Glob(filepath.Join(dir, pkg+"_*.deb")); len(m) == 0 {
		cmd := exec.Command("apt-get", append(opts, "-qq", "download", pkg)...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			return "", fmt.Errorf("apt-get download %s: %v\n%s", pkg, err, out)
		}
	}
	m, _ := filepath.Glob(filepath.Join(dir, pkg+"_*.deb"))
	if len(m) == 0 {
		return "", fmt.Errorf("%s not downloaded", pkg)
	}
	return m[0], nil
}
