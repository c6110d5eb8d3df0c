// SPDX-License-Identifier: Apache-2.0

// Package listen opens the listening sockets of jobscope's services (the
// report service, the notify receiver): host:port, or unix:/path for a
// unix socket that only the right group may reach.
package listen

import (
	"net"
	"os"
	"strings"
)

// Open listens on addr: host:port over TCP, or unix:/path on a unix socket
// whose permission bits are then set to mode. A socket file left at the
// path by an earlier run would make the listen fail, so it is removed
// first; any other kind of file there is left alone (and the listen fails).
func Open(addr string, mode os.FileMode) (net.Listener, error) {
	p, ok := strings.CutPrefix(addr, "unix:")
	if !ok {
		return net.Listen("tcp", addr)
	}
	if fi, err := os.Lstat(p); err == nil && fi.Mode()&os.ModeSocket != 0 {
		_ = os.Remove(p)
	}
	ln, err := net.Listen("unix", p)
	if err != nil {
		return nil, err
	}
	// The mode is set after the socket exists, so until Chmod returns the
	// process umask bounds who may connect; on failure nothing listens.
	if err := os.Chmod(p, mode); err != nil {
		ln.Close()
		return nil, err
	}
	return ln, nil
}
