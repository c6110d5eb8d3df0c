// SPDX-License-Identifier: Apache-2.0

package layering

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestGoModTidy fails when go.mod or go.sum are not what `go mod tidy`
// makes of the imports: a direct requirement marked // indirect, one that
// nothing imports any more (github.com/containerd/cgroups/v3 sat there
// unused), or a missing one. It works offline (GOPROXY=off) from the
// module cache that building and testing filled; a module missing from
// that cache is a fact of the machine, not of go.mod, and skips.
func TestGoModTidy(t *testing.T) {
	gomod, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("go env GOMOD: %v", err)
	}
	cmd := exec.Command("go", "mod", "tidy", "-diff")
	cmd.Dir = filepath.Dir(strings.TrimSpace(string(gomod)))
	cmd.Env = append(os.Environ(), "GOPROXY=off", "GOFLAGS=-mod=mod")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return
	case strings.Contains(stderr.String(), "GOPROXY=off"):
		t.Skipf("a module is not in the module cache and the proxy is off:\n%s", stderr.String())
	case errors.As(err, &exit) && stdout.Len() > 0:
		t.Errorf("go.mod is not tidy: run `go mod tidy` and commit the result:\n%s", stdout.String())
	default:
		t.Fatalf("go mod tidy -diff: %v\n%s%s", err, stdout.String(), stderr.String())
	}
}
