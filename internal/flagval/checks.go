// SPDX-License-Identifier: Apache-2.0

package flagval

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strconv"
	"strings"
)

// The checks below are what String and Check take. Each returns an error
// without the value or the flag's name: pflag's message quotes both
// ("invalid argument "x" for "--flag" flag: ..."), on one line.

// Dir accepts an existing directory: a root jobscope reads from (procfs,
// sysfs, a cgroup tree), where a typo would otherwise export nothing.
func Dir(s string) error {
	fi, err := os.Stat(s)
	if err != nil {
		return statErr(err)
	}
	if !fi.IsDir() {
		return errors.New("not a directory")
	}
	return nil
}

// File accepts an existing file that is not a directory.
func File(s string) error {
	fi, err := os.Stat(s)
	if err != nil {
		return statErr(err)
	}
	if fi.IsDir() {
		return errors.New("is a directory")
	}
	return nil
}

// Exists accepts any existing path (a device node, a socket).
func Exists(s string) error {
	_, err := os.Stat(s)
	return statErr(err)
}

// DirLater accepts a directory that exists or does not exist yet: one that
// another program creates later (the Slurm prolog makes its directories in
// /run with the first job after a boot). Something else at that path is
// refused.
func DirLater(s string) error {
	fi, err := os.Stat(s)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return statErr(err)
	case !fi.IsDir():
		return errors.New("not a directory")
	}
	return nil
}

// Abs accepts an absolute path, existing or not (jobscope creates it).
func Abs(s string) error {
	if !filepath.IsAbs(s) {
		return errors.New("not an absolute path")
	}
	return nil
}

func statErr(err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return errors.New("no such file or directory")
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err // the path is in the flag's message already
	}
	return err
}

// Command accepts a command line whose first word is an executable: a path,
// or a name found in $PATH. A command that cannot run would fail at every
// poll instead of once at start.
func Command(s string) error {
	f := strings.Fields(s)
	if len(f) == 0 {
		return errors.New("empty command")
	}
	if _, err := exec.LookPath(f[0]); err != nil {
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("%q: no such command", f[0])
		}
		return fmt.Errorf("%q: %w", f[0], statErr(err))
	}
	return nil
}

// ListenAddress accepts what the web server listens on: host:port (the
// host may be empty, the port a number or a service name) or vsock://:port.
func ListenAddress(s string) error {
	if rest, ok := strings.CutPrefix(s, "vsock://"); ok {
		_, port, err := net.SplitHostPort(rest)
		if err != nil {
			return err
		}
		if _, err := strconv.ParseUint(port, 10, 32); err != nil {
			return errors.New("vsock port is not a number")
		}
		return nil
	}
	return HostPort(s)
}

// HostPort accepts host:port, with a port number or a service name; an
// empty host means every address.
func HostPort(s string) error {
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return errors.New("want host:port")
	}
	if strings.ContainsFunc(host, badHostRune) {
		return errors.New("the host holds a character no host name has")
	}
	if _, err := net.LookupPort("tcp", port); err != nil {
		return errors.New("not a port")
	}
	return nil
}

func badHostRune(r rune) bool { return r <= ' ' || r == 0x7f || strings.ContainsRune(`/\"'?#@`, r) }

// HTTPURL accepts an absolute http or https URL with a host.
func HTTPURL(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return errors.New("not a URL")
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return errors.New("want an http:// or https:// URL with a host")
	}
	return nil
}

// HTTPPath accepts a path to serve under: it starts with a slash and is
// already clean (a request for /a/../b is redirected to /b, so such a path
// would never be served), and holds only the characters a URL path has
// unescaped, so that it is a plain net/http pattern (no method, no host,
// no {wildcard}) that registers without a panic.
func HTTPPath(s string) error {
	if !strings.HasPrefix(s, "/") {
		return errors.New("must start with /")
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/-._~!$&'()*+,;=:@", r)) {
			return fmt.Errorf("%q has no place in a URL path", r)
		}
	}
	if c := path.Clean(s); c != s && c+"/" != s {
		return fmt.Errorf("not a clean path (%s)", c)
	}
	return nil
}

// Optional accepts "" (the flag's "none" or "default") and whatever check
// accepts.
func Optional(check func(string) error) func(string) error {
	return func(s string) error {
		if s == "" {
			return nil
		}
		return check(s)
	}
}

// Each applies check to every element of a comma-separated list, the form
// pflag's string slices and maps take.
func Each(check func(string) error) func(string) error {
	return func(s string) error {
		if s == "" {
			return nil
		}
		for e := range strings.SplitSeq(s, ",") {
			if err := check(e); err != nil {
				return fmt.Errorf("%q: %w", e, err)
			}
		}
		return nil
	}
}
