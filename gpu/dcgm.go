package gpu

import (
	"fmt"
	"log/slog"
)

// openDCGM is the slot for a go-dcgm backend. It is not built: the pinned
// go-dcgm versions could be downloaded but not verified against the Go
// checksum database from the project's build machines, so no DCGM code
// ships yet. Tests put a fake DCGM behind the same Backend interface
// (Config.OpenDCGM) to cover what the collector does with DCGM's fields.
func openDCGM(*slog.Logger) (Backend, error) {
	return nil, fmt.Errorf("dcgm: %w", ErrNotBuilt)
}
