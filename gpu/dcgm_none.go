// SPDX-License-Identifier: Apache-2.0

//go:build !cgo || nogpu

package gpu

import (
	"fmt"
	"log/slog"
)

// openDCGM without cgo: go-dcgm dlopens libdcgm through cgo, so static
// (CGO_ENABLED=0) and `nogpu` builds have no DCGM backend.
func openDCGM(DCGMOptions, *slog.Logger) (Backend, error) {
	return nil, fmt.Errorf("dcgm (built without cgo or with the nogpu tag): %w", ErrNotBuilt)
}

// DCGMBuilt reports whether this binary carries the DCGM backend.
const DCGMBuilt = false
