// SPDX-License-Identifier: Apache-2.0

//go:build !cgo || nogpu

package gpu

import (
	"fmt"
	"log/slog"
)

// openNVML without cgo: go-nvml loads libnvidia-ml through cgo's dlopen,
// so static (CGO_ENABLED=0) and `nogpu` builds have no NVML backend.
func openNVML(*slog.Logger) (Backend, error) {
	return nil, fmt.Errorf("nvml (built without cgo or with the nogpu tag): %w", ErrNotBuilt)
}

// NVMLBuilt reports whether this binary carries the NVML backend.
const NVMLBuilt = false
