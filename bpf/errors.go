// SPDX-License-Identifier: Apache-2.0

//go:build linux

package bpf

import (
	"errors"
	"fmt"
	"os"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

// LoadError says why the programs could not be loaded or attached, with a
// short cause an admin can act on.
type LoadError struct {
	Cause string // no_privilege, pin_owner, no_btf, unsupported, verifier, bpffs, load_failed
	Err   error
}

func (e *LoadError) Error() string { return "ebpf " + e.Cause + ": " + e.Err.Error() }
func (e *LoadError) Unwrap() error { return e.Err }

func classify(stage string, err error) *LoadError {
	var ve *ebpf.VerifierError
	switch {
	// The verifier answers EACCES for an access it refuses: with a log, a
	// rejection is the verifier's, not a lack of privileges.
	case errors.As(err, &ve) && len(ve.Log) > 0:
		return &LoadError{"verifier", fmt.Errorf("%s: %w", stage, err)}
	case errors.Is(err, unix.EPERM), errors.Is(err, os.ErrPermission):
		return &LoadError{"no_privilege", fmt.Errorf("%s: %w (needs root, or CAP_BPF+CAP_PERFMON+CAP_SYS_RESOURCE)", stage, err)}
	case errors.As(err, &ve):
		return &LoadError{"verifier", fmt.Errorf("%s: %w", stage, err)}
	case errors.Is(err, ebpf.ErrNotSupported):
		return &LoadError{"unsupported", fmt.Errorf("%s: %w", stage, err)}
	}
	return &LoadError{"load_failed", fmt.Errorf("%s: %w", stage, err)}
}
