// SPDX-License-Identifier: Apache-2.0

//go:build linux

package bpf

import (
	"errors"
	"os"
	"testing"
)

// TestLoadWithoutPrivilege checks the one-line cause a non-root exporter
// logs. It runs only as non-root (CI runs it as nobody:
// `go test -c -o /tmp/bpf.test ./bpf && runuser -u nobody -- /tmp/bpf.test -test.run WithoutPrivilege`).
func TestLoadWithoutPrivilege(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root can load: this test checks what a non-root user is told")
	}
	o, err := Load(Config{MaxJobs: 8, V2JobLevel: 3})
	if err == nil {
		o.Close()
		t.Skip("this user may load BPF programs (CAP_BPF or unprivileged BPF on)")
	}
	var le *LoadError
	if !errors.As(err, &le) || le.Cause != "no_privilege" {
		t.Fatalf("got %v, want a LoadError with cause no_privilege", err)
	}
	t.Logf("logged cause: %v", err)
}
